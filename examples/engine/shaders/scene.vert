#version 450
// Main pass: per-vertex Lambert term and light-space position for the shadow test.
layout(location = 0) in vec3 in_pos;
layout(location = 1) in vec3 in_normal;
layout(location = 2) in vec4 inst_pos_scale;
layout(location = 3) in vec4 inst_color;
layout(set = 0, binding = 0) uniform Scene { mat4 vp; mat4 light_vp; vec4 light_dir; } sc;
layout(location = 0) out vec3 v_color;
layout(location = 1) out float v_diff;
layout(location = 2) out vec4 v_light;
void main()
{
    vec3 wp = inst_pos_scale.xyz + in_pos * inst_pos_scale.w;
    gl_Position = sc.vp * vec4(wp, 1.0);
    v_color = inst_color.rgb;
    v_diff = max(dot(in_normal, sc.light_dir.xyz), 0.0);
    v_light = sc.light_vp * vec4(wp, 1.0);
}
