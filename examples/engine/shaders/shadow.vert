#version 450
// Shadow pass: depth from the light. Instance attributes: position + scale, colour (unused).
layout(location = 0) in vec3 in_pos;
layout(location = 1) in vec3 in_normal;
layout(location = 2) in vec4 inst_pos_scale;
layout(location = 3) in vec4 inst_color;
layout(push_constant) uniform Push { mat4 light_vp; } pc;
void main()
{
    vec3 wp = inst_pos_scale.xyz + in_pos * inst_pos_scale.w;
    gl_Position = pc.light_vp * vec4(wp, 1.0);
}
