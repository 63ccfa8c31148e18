#version 450
// Per-pixel work for the Vulkan GPU-zone test.
layout(location = 0) out vec4 color;
layout(push_constant) uniform Params { uint iterations; };
void main()
{
    vec2 uv = gl_FragCoord.xy / 256.0;
    float a = uv.x, b = uv.y;
    for (uint k = 0u; k < iterations; k++) {
        a = fract(a * 1.7 + sin(b));
        b = fract(b * 1.3 + cos(a));
    }
    color = vec4(a, b, 0.5, 1.0);
}
