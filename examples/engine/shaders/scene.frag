#version 450
layout(set = 0, binding = 1) uniform sampler2D shadow_map;
layout(location = 0) in vec3 v_color;
layout(location = 1) in float v_diff;
layout(location = 2) in vec4 v_light;
layout(location = 0) out vec4 out_color;
void main()
{
    vec3 l = v_light.xyz / v_light.w;
    vec2 uv = l.xy * 0.5 + 0.5;
    float lit = 1.0;
    if (all(greaterThanEqual(uv, vec2(0.0))) && all(lessThan(uv, vec2(1.0))) &&
        l.z - 0.004 > texture(shadow_map, uv).r)
        lit = 0.3;
    out_color = vec4(v_color * (0.22 + 0.9 * v_diff * lit), 1.0);
}
