#version 450
// Compute work for the Vulkan GPU-zone test: a few hundred dependent ALU steps per element.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float v[]; };
layout(push_constant) uniform Params { uint n; uint iterations; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i >= n)
        return;
    float x = v[i];
    for (uint k = 0u; k < iterations; k++)
        x = x * 0.999 + sin(x + float(k));
    v[i] = x;
}
