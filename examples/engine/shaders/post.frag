#version 450
// Tone mapping, vignette and gamma: the same arithmetic as the CPU rasterizer's post pass.
layout(set = 0, binding = 0) uniform sampler2D hdr;
layout(location = 0) in vec2 v_uv;
layout(location = 0) out vec4 out_color;
void main()
{
    vec3 c = texture(hdr, v_uv).rgb * 1.6;
    vec2 d = v_uv - 0.5;
    c = c / (1.0 + c) * (1.0 - 0.8 * dot(d, d));
    out_color = vec4(sqrt(max(c, vec3(0.0))), 1.0);
}
