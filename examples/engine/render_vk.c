/*
 * render_vk.c - the Vulkan back end: three offscreen passes per frame with GPU timestamps.
 *
 * Passes: shadow (depth from the light into a 512x512 depth image), main (HDR colour with a
 * shadow test against that image) and post (tone mapping into RGBA8). Instances are drawn with
 * one vkCmdDrawIndexed per batch of up to RENDER_MAX_BATCH, from a host-visible instance
 * buffer rewritten each frame. Shaders are GLSL compiled to SPIR-V at build time
 * (glslangValidator) and embedded. There is no window and no swapchain: the engine is headless,
 * and any device works, including Mesa's lavapipe on machines without a GPU.
 *
 * GPU zones come from mprof's Vulkan helper (include/mprof/vulkan.h): MPROF_VK_ZONE_C around
 * each pass writes a timestamp pair into the helper's query pool, and MPROF_VK_COLLECT at the
 * start of each frame's command buffer uploads the timestamps of finished frames. The helper
 * calibrates the GPU clock against the profiler's at start-up.
 *
 * Two frames are in flight: each has its own command buffer, fence, query pool, instance
 * buffer and uniform buffer, so the CPU builds frame N+1 while the GPU draws frame N, and only
 * waits ("Renderer::gpu_wait") for frame N-1 before reusing its slot. The images are shared;
 * the render passes' external dependencies order each pass after the previous frame's use.
 */
#include "render.h"

#include "mprof/mprof.h"

#ifndef ENGINE_HAVE_VULKAN

static int novk_init(const engine_options *opt, const render_mesh meshes[MESH_COUNT])
{
    (void)opt;
    (void)meshes;
    log_msg(ENG_LOG_INFO, "renderer: this build has no Vulkan support (no libvulkan-dev or "
            "glslangValidator at build time)");
    return -1;
}
static void novk_frame(const render_scene *sc, render_stats *out)
{
    (void)sc;
    (void)out;
}
static const uint8_t *novk_pixels(int *w, int *h)
{
    *w = *h = 0;
    return NULL;
}
static void novk_shutdown(void) {}
const render_backend render_backend_vulkan = {"vulkan", novk_init, novk_frame, novk_pixels,
                                              novk_shutdown};

#else

#include <vulkan/vulkan.h>

#include "mprof/vulkan.h"

#include <stdlib.h>
#include <string.h>

#include "spv_post_frag.h"
#include "spv_post_vert.h"
#include "spv_scene_frag.h"
#include "spv_scene_vert.h"
#include "spv_shadow_vert.h"

#define FRAMES_IN_FLIGHT 2
#define HDR_FORMAT VK_FORMAT_R16G16B16A16_SFLOAT
#define OUT_FORMAT VK_FORMAT_R8G8B8A8_UNORM
#define DEPTH_FORMAT VK_FORMAT_D32_SFLOAT

typedef struct vk_image {
    VkImage image;
    VkDeviceMemory mem;
    VkImageView view;
} vk_image;

typedef struct vk_buffer {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map; /* host-visible buffers stay mapped */
    VkDeviceSize size;
} vk_buffer;

typedef struct scene_ubo {
    float vp[16], light_vp[16], light_dir[4];
} scene_ubo;

/* What one frame in flight owns. */
typedef struct vk_frame {
    VkCommandBuffer cmd;
    VkFence fence;
    vk_buffer instances, ubo;
    VkDescriptorSet ds_scene;
    int pending;             /* submitted, fence not yet waited for */
} vk_frame;

static struct {
    VkInstance inst;
    VkPhysicalDevice pd;
    VkPhysicalDeviceMemoryProperties memprops;
    VkDevice dev;
    uint32_t qfamily;
    VkQueue queue;
    VkCommandPool pool;
    vk_frame frames[FRAMES_IN_FLIGHT];
    uint32_t slot; /* the frame slot the next frame uses */
    int calibrated_ext; /* VK_EXT_calibrated_timestamps enabled on the device */
    int api_1_1;        /* the instance was created for Vulkan 1.1 */
    uint32_t device_api; /* the physical device's Vulkan version */
    int w, h;
    vk_image shadow, hdr, depth, out;
    VkRenderPass rp_shadow, rp_main, rp_post;
    VkFramebuffer fb_shadow, fb_main, fb_post;
    VkSampler sampler;
    VkDescriptorSetLayout dsl_scene, dsl_post;
    VkDescriptorPool dpool;
    VkDescriptorSet ds_post;
    VkPipelineLayout pl_shadow, pl_scene, pl_post;
    VkPipeline p_shadow, p_scene, p_post;
    vk_buffer vbuf, ibuf, readback;
    uint32_t first_index[MESH_COUNT], vertex_offset[MESH_COUNT], index_count[MESH_COUNT];
    uint8_t *pixels;
    int have_frame;
    char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    mprof_vk_ctx *prof; /* the GPU timeline; NULL without profiling or timestamps */
} vk;

#define VK_TRY(call)                                                                               \
    do {                                                                                           \
        VkResult r_ = (call);                                                                      \
        if (r_ != VK_SUCCESS) {                                                                    \
            log_msg(ENG_LOG_INFO, "renderer: vulkan: %s failed (VkResult %d)", #call, (int)r_);   \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static int find_memory(uint32_t type_bits, VkMemoryPropertyFlags want, uint32_t *out)
{
    for (uint32_t i = 0; i < vk.memprops.memoryTypeCount; i++)
        if ((type_bits & (1u << i)) && (vk.memprops.memoryTypes[i].propertyFlags & want) == want) {
            *out = i;
            return 0;
        }
    log_msg(ENG_LOG_INFO, "renderer: vulkan: no memory type with flags 0x%x", (unsigned)want);
    return -1;
}

static int make_buffer(vk_buffer *b, VkDeviceSize size, VkBufferUsageFlags usage)
{
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
                             .usage = usage, .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VK_TRY(vkCreateBuffer(vk.dev, &bi, NULL, &b->buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk.dev, b->buf, &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size};
    if (find_memory(req.memoryTypeBits,
                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                    &ai.memoryTypeIndex))
        return -1;
    VK_TRY(vkAllocateMemory(vk.dev, &ai, NULL, &b->mem));
    VK_TRY(vkBindBufferMemory(vk.dev, b->buf, b->mem, 0));
    VK_TRY(vkMapMemory(vk.dev, b->mem, 0, size, 0, &b->map));
    b->size = size;
    return 0;
}

static void free_buffer(vk_buffer *b)
{
    if (b->buf)
        vkDestroyBuffer(vk.dev, b->buf, NULL);
    if (b->mem)
        vkFreeMemory(vk.dev, b->mem, NULL);
    memset(b, 0, sizeof *b);
}

static int make_image(vk_image *img, int w, int h, VkFormat fmt, VkImageUsageFlags usage,
                      VkImageAspectFlags aspect)
{
    VkImageCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                            .imageType = VK_IMAGE_TYPE_2D,
                            .format = fmt,
                            .extent = {(uint32_t)w, (uint32_t)h, 1},
                            .mipLevels = 1,
                            .arrayLayers = 1,
                            .samples = VK_SAMPLE_COUNT_1_BIT,
                            .tiling = VK_IMAGE_TILING_OPTIMAL,
                            .usage = usage,
                            .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
                            .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
    VK_TRY(vkCreateImage(vk.dev, &ii, NULL, &img->image));
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(vk.dev, img->image, &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size};
    if (find_memory(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &ai.memoryTypeIndex))
        return -1;
    VK_TRY(vkAllocateMemory(vk.dev, &ai, NULL, &img->mem));
    VK_TRY(vkBindImageMemory(vk.dev, img->image, img->mem, 0));
    VkImageViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
                                .image = img->image,
                                .viewType = VK_IMAGE_VIEW_TYPE_2D,
                                .format = fmt,
                                .subresourceRange = {aspect, 0, 1, 0, 1}};
    VK_TRY(vkCreateImageView(vk.dev, &vi, NULL, &img->view));
    return 0;
}

static void free_image(vk_image *img)
{
    if (img->view)
        vkDestroyImageView(vk.dev, img->view, NULL);
    if (img->image)
        vkDestroyImage(vk.dev, img->image, NULL);
    if (img->mem)
        vkFreeMemory(vk.dev, img->mem, NULL);
    memset(img, 0, sizeof *img);
}

/* A render pass with an optional colour and an optional depth attachment, each cleared (or not
 * loaded), stored when read later, and left in final_* layouts for the next pass. */
static int make_render_pass(VkRenderPass *rp, VkFormat color_fmt, VkImageLayout color_final,
                            VkFormat depth_fmt, VkImageLayout depth_final, int store_depth)
{
    VkAttachmentDescription att[2];
    VkAttachmentReference cref = {0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkAttachmentReference dref = {0, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
    uint32_t n = 0;
    if (color_fmt != VK_FORMAT_UNDEFINED) {
        att[n] = (VkAttachmentDescription){0, color_fmt, VK_SAMPLE_COUNT_1_BIT,
                                           VK_ATTACHMENT_LOAD_OP_CLEAR, VK_ATTACHMENT_STORE_OP_STORE,
                                           VK_ATTACHMENT_LOAD_OP_DONT_CARE,
                                           VK_ATTACHMENT_STORE_OP_DONT_CARE,
                                           VK_IMAGE_LAYOUT_UNDEFINED, color_final};
        cref.attachment = n++;
    }
    if (depth_fmt != VK_FORMAT_UNDEFINED) {
        att[n] = (VkAttachmentDescription){
            0, depth_fmt, VK_SAMPLE_COUNT_1_BIT, VK_ATTACHMENT_LOAD_OP_CLEAR,
            store_depth ? VK_ATTACHMENT_STORE_OP_STORE : VK_ATTACHMENT_STORE_OP_DONT_CARE,
            VK_ATTACHMENT_LOAD_OP_DONT_CARE, VK_ATTACHMENT_STORE_OP_DONT_CARE,
            VK_IMAGE_LAYOUT_UNDEFINED, depth_final};
        dref.attachment = n++;
    }
    VkSubpassDescription sub = {
        .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
        .colorAttachmentCount = color_fmt != VK_FORMAT_UNDEFINED ? 1u : 0u,
        .pColorAttachments = color_fmt != VK_FORMAT_UNDEFINED ? &cref : NULL,
        .pDepthStencilAttachment = depth_fmt != VK_FORMAT_UNDEFINED ? &dref : NULL};
    const VkPipelineStageFlags attach_stages = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT |
                                               VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT |
                                               VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT;
    const VkAccessFlags attach_writes = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT |
                                        VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
    VkSubpassDependency deps[2] = {
        {VK_SUBPASS_EXTERNAL, 0, attach_stages | VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT,
         attach_stages | VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT, attach_writes,
         attach_writes | VK_ACCESS_SHADER_READ_BIT, 0},
        {0, VK_SUBPASS_EXTERNAL, attach_stages,
         VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, attach_writes,
         VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT, 0}};
    VkRenderPassCreateInfo ri = {.sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO,
                                 .attachmentCount = n,
                                 .pAttachments = att,
                                 .subpassCount = 1,
                                 .pSubpasses = &sub,
                                 .dependencyCount = 2,
                                 .pDependencies = deps};
    VK_TRY(vkCreateRenderPass(vk.dev, &ri, NULL, rp));
    return 0;
}

static int make_framebuffer(VkFramebuffer *fb, VkRenderPass rp, const VkImageView *views,
                            uint32_t n, int w, int h)
{
    VkFramebufferCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO,
                                  .renderPass = rp,
                                  .attachmentCount = n,
                                  .pAttachments = views,
                                  .width = (uint32_t)w,
                                  .height = (uint32_t)h,
                                  .layers = 1};
    VK_TRY(vkCreateFramebuffer(vk.dev, &fi, NULL, fb));
    return 0;
}

static int make_shader(VkShaderModule *m, const uint32_t *code, size_t bytes)
{
    VkShaderModuleCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = bytes,
                                   .pCode = code};
    VK_TRY(vkCreateShaderModule(vk.dev, &si, NULL, m));
    return 0;
}

typedef struct pipe_desc {
    const uint32_t *vs;
    size_t vs_bytes;
    const uint32_t *fs; /* NULL: depth only */
    size_t fs_bytes;
    int instanced;      /* mesh + instance vertex input; else none (full-screen triangle) */
    int depth;
    int cull_back;
    int depth_bias;
    VkPipelineLayout layout;
    VkRenderPass rp;
    int w, h;
} pipe_desc;

static int make_pipeline(VkPipeline *out, const pipe_desc *d)
{
    VkShaderModule vs = VK_NULL_HANDLE, fs = VK_NULL_HANDLE;
    int rc = -1;
    if (make_shader(&vs, d->vs, d->vs_bytes) || (d->fs && make_shader(&fs, d->fs, d->fs_bytes)))
        goto done;
    VkPipelineShaderStageCreateInfo stages[2] = {
        {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
         .stage = VK_SHADER_STAGE_VERTEX_BIT, .module = vs, .pName = "main"},
        {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
         .stage = VK_SHADER_STAGE_FRAGMENT_BIT, .module = fs, .pName = "main"}};
    VkVertexInputBindingDescription binds[2] = {
        {0, sizeof(render_vertex), VK_VERTEX_INPUT_RATE_VERTEX},
        {1, sizeof(render_instance), VK_VERTEX_INPUT_RATE_INSTANCE}};
    VkVertexInputAttributeDescription attrs[4] = {
        {0, 0, VK_FORMAT_R32G32B32_SFLOAT, 0},
        {1, 0, VK_FORMAT_R32G32B32_SFLOAT, 12},
        {2, 1, VK_FORMAT_R32G32B32A32_SFLOAT, 0},
        {3, 1, VK_FORMAT_R32G32B32A32_SFLOAT, 16}};
    VkPipelineVertexInputStateCreateInfo vin = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
        .vertexBindingDescriptionCount = d->instanced ? 2u : 0u,
        .pVertexBindingDescriptions = binds,
        .vertexAttributeDescriptionCount = d->instanced ? 4u : 0u,
        .pVertexAttributeDescriptions = attrs};
    VkPipelineInputAssemblyStateCreateInfo ia = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO,
        .topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST};
    VkViewport vp = {0, 0, (float)d->w, (float)d->h, 0, 1};
    VkRect2D scissor = {{0, 0}, {(uint32_t)d->w, (uint32_t)d->h}};
    VkPipelineViewportStateCreateInfo vps = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO,
        .viewportCount = 1, .pViewports = &vp, .scissorCount = 1, .pScissors = &scissor};
    VkPipelineRasterizationStateCreateInfo rs = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO,
        .polygonMode = VK_POLYGON_MODE_FILL,
        .cullMode = d->cull_back ? VK_CULL_MODE_BACK_BIT : VK_CULL_MODE_NONE,
        .frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE,
        .depthBiasEnable = d->depth_bias ? VK_TRUE : VK_FALSE,
        .depthBiasConstantFactor = 1.25f,
        .depthBiasSlopeFactor = 1.75f,
        .lineWidth = 1.0f};
    VkPipelineMultisampleStateCreateInfo ms = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO,
        .rasterizationSamples = VK_SAMPLE_COUNT_1_BIT};
    VkPipelineDepthStencilStateCreateInfo ds = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO,
        .depthTestEnable = d->depth ? VK_TRUE : VK_FALSE,
        .depthWriteEnable = d->depth ? VK_TRUE : VK_FALSE,
        .depthCompareOp = VK_COMPARE_OP_LESS};
    VkPipelineColorBlendAttachmentState cba = {.colorWriteMask = 0xf};
    VkPipelineColorBlendStateCreateInfo cb = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO,
        .attachmentCount = d->fs ? 1u : 0u, .pAttachments = &cba};
    VkGraphicsPipelineCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO,
                                       .stageCount = d->fs ? 2u : 1u,
                                       .pStages = stages,
                                       .pVertexInputState = &vin,
                                       .pInputAssemblyState = &ia,
                                       .pViewportState = &vps,
                                       .pRasterizationState = &rs,
                                       .pMultisampleState = &ms,
                                       .pDepthStencilState = &ds,
                                       .pColorBlendState = &cb,
                                       .layout = d->layout,
                                       .renderPass = d->rp};
    VkResult r = vkCreateGraphicsPipelines(vk.dev, VK_NULL_HANDLE, 1, &pi, NULL, out);
    if (r != VK_SUCCESS)
        log_msg(ENG_LOG_INFO, "renderer: vulkan: vkCreateGraphicsPipelines failed (%d)", (int)r);
    else
        rc = 0;
done:
    if (vs)
        vkDestroyShaderModule(vk.dev, vs, NULL);
    if (fs)
        vkDestroyShaderModule(vk.dev, fs, NULL);
    return rc;
}

static int pick_device(void)
{
    uint32_t n = 0;
    VK_TRY(vkEnumeratePhysicalDevices(vk.inst, &n, NULL));
    if (n == 0) {
        log_msg(ENG_LOG_INFO, "renderer: vulkan: no physical device");
        return -1;
    }
    VkPhysicalDevice devs[16];
    if (n > 16)
        n = 16;
    VK_TRY(vkEnumeratePhysicalDevices(vk.inst, &n, devs));
    for (uint32_t i = 0; i < n; i++) {
        uint32_t nq = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(devs[i], &nq, NULL);
        VkQueueFamilyProperties qp[16];
        if (nq > 16)
            nq = 16;
        vkGetPhysicalDeviceQueueFamilyProperties(devs[i], &nq, qp);
        for (uint32_t q = 0; q < nq; q++)
            if (qp[q].queueFlags & VK_QUEUE_GRAPHICS_BIT) {
                VkPhysicalDeviceProperties props;
                vkGetPhysicalDeviceProperties(devs[i], &props);
                vk.pd = devs[i];
                vk.qfamily = q;
                vk.device_api = props.apiVersion;
                memcpy(vk.device_name, props.deviceName, sizeof vk.device_name);
                vk.device_name[sizeof vk.device_name - 1] = 0;
                vkGetPhysicalDeviceMemoryProperties(vk.pd, &vk.memprops);
                return 0;
            }
    }
    log_msg(ENG_LOG_INFO, "renderer: vulkan: no device with a graphics queue");
    return -1;
}

static int upload_meshes(const render_mesh meshes[MESH_COUNT])
{
    VkDeviceSize vbytes = 0, ibytes = 0;
    for (int m = 0; m < MESH_COUNT; m++) {
        vbytes += meshes[m].n_verts * sizeof(render_vertex);
        ibytes += meshes[m].n_indices * sizeof(uint16_t);
    }
    if (make_buffer(&vk.vbuf, vbytes, VK_BUFFER_USAGE_VERTEX_BUFFER_BIT) ||
        make_buffer(&vk.ibuf, ibytes, VK_BUFFER_USAGE_INDEX_BUFFER_BIT))
        return -1;
    uint32_t v = 0, i = 0;
    for (int m = 0; m < MESH_COUNT; m++) {
        memcpy((render_vertex *)vk.vbuf.map + v, meshes[m].verts,
               meshes[m].n_verts * sizeof(render_vertex));
        memcpy((uint16_t *)vk.ibuf.map + i, meshes[m].indices,
               meshes[m].n_indices * sizeof(uint16_t));
        vk.vertex_offset[m] = v;
        vk.first_index[m] = i;
        vk.index_count[m] = meshes[m].n_indices;
        v += meshes[m].n_verts;
        i += meshes[m].n_indices;
    }
    return 0;
}

static int make_descriptors(void)
{
    VkDescriptorSetLayoutBinding sb[2] = {
        {0, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1, VK_SHADER_STAGE_VERTEX_BIT, NULL},
        {1, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1, VK_SHADER_STAGE_FRAGMENT_BIT, NULL}};
    VkDescriptorSetLayoutCreateInfo li = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = 2,
        .pBindings = sb};
    VK_TRY(vkCreateDescriptorSetLayout(vk.dev, &li, NULL, &vk.dsl_scene));
    VkDescriptorSetLayoutBinding pb = {0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1,
                                       VK_SHADER_STAGE_FRAGMENT_BIT, NULL};
    li.bindingCount = 1;
    li.pBindings = &pb;
    VK_TRY(vkCreateDescriptorSetLayout(vk.dev, &li, NULL, &vk.dsl_post));
    VkDescriptorPoolSize sizes[2] = {
        {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, FRAMES_IN_FLIGHT},
        {VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, FRAMES_IN_FLIGHT + 1}};
    VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                     .maxSets = FRAMES_IN_FLIGHT + 1, .poolSizeCount = 2,
                                     .pPoolSizes = sizes};
    VK_TRY(vkCreateDescriptorPool(vk.dev, &pi, NULL, &vk.dpool));
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = vk.dpool, .descriptorSetCount = 1,
                                      .pSetLayouts = &vk.dsl_post};
    VK_TRY(vkAllocateDescriptorSets(vk.dev, &ai, &vk.ds_post));
    ai.pSetLayouts = &vk.dsl_scene;
    for (int f = 0; f < FRAMES_IN_FLIGHT; f++)
        VK_TRY(vkAllocateDescriptorSets(vk.dev, &ai, &vk.frames[f].ds_scene));
    VkSamplerCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
                              .magFilter = VK_FILTER_NEAREST, .minFilter = VK_FILTER_NEAREST,
                              .addressModeU = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                              .addressModeV = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                              .addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                              .maxLod = 0};
    VK_TRY(vkCreateSampler(vk.dev, &si, NULL, &vk.sampler));
    VkDescriptorImageInfo shadow_img = {vk.sampler, vk.shadow.view,
                                        VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
    VkDescriptorImageInfo hdr_img = {vk.sampler, vk.hdr.view,
                                     VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
    VkWriteDescriptorSet post = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                 .dstSet = vk.ds_post, .dstBinding = 0, .descriptorCount = 1,
                                 .descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
                                 .pImageInfo = &hdr_img};
    vkUpdateDescriptorSets(vk.dev, 1, &post, 0, NULL);
    for (int f = 0; f < FRAMES_IN_FLIGHT; f++) {
        VkDescriptorBufferInfo ub = {vk.frames[f].ubo.buf, 0, sizeof(scene_ubo)};
        VkWriteDescriptorSet w[2] = {
            {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = vk.frames[f].ds_scene,
             .dstBinding = 0, .descriptorCount = 1,
             .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, .pBufferInfo = &ub},
            {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = vk.frames[f].ds_scene,
             .dstBinding = 1, .descriptorCount = 1,
             .descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
             .pImageInfo = &shadow_img}};
        vkUpdateDescriptorSets(vk.dev, 2, w, 0, NULL);
    }
    return 0;
}

static int make_pipelines(void)
{
    VkPushConstantRange pc = {VK_SHADER_STAGE_VERTEX_BIT, 0, 64};
    VkPipelineLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .pushConstantRangeCount = 1, .pPushConstantRanges = &pc};
    VK_TRY(vkCreatePipelineLayout(vk.dev, &li, NULL, &vk.pl_shadow));
    li.pushConstantRangeCount = 0;
    li.setLayoutCount = 1;
    li.pSetLayouts = &vk.dsl_scene;
    VK_TRY(vkCreatePipelineLayout(vk.dev, &li, NULL, &vk.pl_scene));
    li.pSetLayouts = &vk.dsl_post;
    VK_TRY(vkCreatePipelineLayout(vk.dev, &li, NULL, &vk.pl_post));

    pipe_desc d = {spv_shadow_vert, sizeof spv_shadow_vert, NULL, 0, 1, 1, 0, 1,
                   vk.pl_shadow, vk.rp_shadow, RENDER_SHADOW_SIZE, RENDER_SHADOW_SIZE};
    if (make_pipeline(&vk.p_shadow, &d))
        return -1;
    d = (pipe_desc){spv_scene_vert, sizeof spv_scene_vert, spv_scene_frag, sizeof spv_scene_frag,
                    1, 1, 1, 0, vk.pl_scene, vk.rp_main, vk.w, vk.h};
    if (make_pipeline(&vk.p_scene, &d))
        return -1;
    d = (pipe_desc){spv_post_vert, sizeof spv_post_vert, spv_post_frag, sizeof spv_post_frag,
                    0, 0, 0, 0, vk.pl_post, vk.rp_post, vk.w, vk.h};
    return make_pipeline(&vk.p_post, &d);
}

static void vk_shutdown(void);
static void finish_frames(void);

static int vk_init_inner(const engine_options *opt, const render_mesh meshes[MESH_COUNT])
{
    vk.w = opt->width;
    vk.h = opt->height;
    /* Vulkan 1.1 when the loader has it: VK_EXT_calibrated_timestamps needs
     * get_physical_device_properties2, core from 1.1. Everything else here is 1.0. */
    uint32_t loader_version = VK_API_VERSION_1_0;
    PFN_vkEnumerateInstanceVersion enum_version =
        (PFN_vkEnumerateInstanceVersion)vkGetInstanceProcAddr(NULL, "vkEnumerateInstanceVersion");
    if (enum_version && enum_version(&loader_version) != VK_SUCCESS)
        loader_version = VK_API_VERSION_1_0;
    vk.api_1_1 = loader_version >= VK_API_VERSION_1_1;
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "mprof_engine",
                             .apiVersion = vk.api_1_1 ? VK_API_VERSION_1_1 : VK_API_VERSION_1_0};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &app};
    VK_TRY(vkCreateInstance(&ii, NULL, &vk.inst));
    if (pick_device())
        return -1;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = vk.qfamily, .queueCount = 1,
                                  .pQueuePriorities = &prio};
    /* The profiler relates GPU and CPU clocks best through VK_EXT_calibrated_timestamps. */
    const char *ext = VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
    vk.calibrated_ext = vk.api_1_1 && vk.device_api >= VK_API_VERSION_1_1 &&
                        mprof_vk_has_calibrated_timestamps(vk.inst, vk.pd, NULL);
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi,
                             .enabledExtensionCount = vk.calibrated_ext ? 1u : 0u,
                             .ppEnabledExtensionNames = &ext};
    VK_TRY(vkCreateDevice(vk.pd, &di, NULL, &vk.dev));
    vkGetDeviceQueue(vk.dev, vk.qfamily, 0, &vk.queue);
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = vk.qfamily};
    VK_TRY(vkCreateCommandPool(vk.dev, &pi, NULL, &vk.pool));
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = vk.pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    for (int f = 0; f < FRAMES_IN_FLIGHT; f++) {
        vk_frame *fr = &vk.frames[f];
        VK_TRY(vkAllocateCommandBuffers(vk.dev, &ai, &fr->cmd));
        VK_TRY(vkCreateFence(vk.dev, &fi, NULL, &fr->fence));
        if (make_buffer(&fr->ubo, sizeof(scene_ubo), VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT))
            return -1;
    }

    const VkImageUsageFlags sampled_depth =
        VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT | VK_IMAGE_USAGE_SAMPLED_BIT;
    if (make_image(&vk.shadow, RENDER_SHADOW_SIZE, RENDER_SHADOW_SIZE, DEPTH_FORMAT,
                   sampled_depth, VK_IMAGE_ASPECT_DEPTH_BIT) ||
        make_image(&vk.hdr, vk.w, vk.h, HDR_FORMAT,
                   VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_SAMPLED_BIT,
                   VK_IMAGE_ASPECT_COLOR_BIT) ||
        make_image(&vk.depth, vk.w, vk.h, DEPTH_FORMAT,
                   VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, VK_IMAGE_ASPECT_DEPTH_BIT) ||
        make_image(&vk.out, vk.w, vk.h, OUT_FORMAT,
                   VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                   VK_IMAGE_ASPECT_COLOR_BIT))
        return -1;
    if (make_render_pass(&vk.rp_shadow, VK_FORMAT_UNDEFINED, VK_IMAGE_LAYOUT_UNDEFINED,
                         DEPTH_FORMAT, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 1) ||
        make_render_pass(&vk.rp_main, HDR_FORMAT, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                         DEPTH_FORMAT, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL, 0) ||
        make_render_pass(&vk.rp_post, OUT_FORMAT, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                         VK_FORMAT_UNDEFINED, VK_IMAGE_LAYOUT_UNDEFINED, 0))
        return -1;
    VkImageView main_views[2] = {vk.hdr.view, vk.depth.view};
    if (make_framebuffer(&vk.fb_shadow, vk.rp_shadow, &vk.shadow.view, 1, RENDER_SHADOW_SIZE,
                         RENDER_SHADOW_SIZE) ||
        make_framebuffer(&vk.fb_main, vk.rp_main, main_views, 2, vk.w, vk.h) ||
        make_framebuffer(&vk.fb_post, vk.rp_post, &vk.out.view, 1, vk.w, vk.h))
        return -1;
    if (upload_meshes(meshes) ||
        make_buffer(&vk.readback, (VkDeviceSize)vk.w * (VkDeviceSize)vk.h * 4,
                    VK_BUFFER_USAGE_TRANSFER_DST_BIT) ||
        make_descriptors() || make_pipelines())
        return -1;
    vk.pixels = malloc((size_t)vk.w * (size_t)vk.h * 4);
    if (!vk.pixels)
        return -1;
    return 0;
}

static int vk_init(const engine_options *opt, const render_mesh meshes[MESH_COUNT])
{
    MPROF_ZONE_C("Renderer::vulkan_init", MPROF_COLOR_RENDERER);
    memset(&vk, 0, sizeof vk);
    if (vk_init_inner(opt, meshes)) {
        vk_shutdown();
        return -1;
    }
    /* The GPU timeline: without MPROF_ENABLE this is an inline no-op that leaves prof NULL. */
    mprof_vk_config pc;
    memset(&pc, 0, sizeof pc);
    pc.instance = vk.inst;
    pc.physical_device = vk.pd;
    pc.device = vk.dev;
    pc.queue = vk.queue;
    pc.queue_family = vk.qfamily;
    pc.name = "Vulkan";
    pc.frames_in_flight = FRAMES_IN_FLIGHT;
    pc.calibrated_timestamps = vk.calibrated_ext;
    mprof_result pr = mprof_vk_context_create(&pc, &vk.prof);
    log_msg(ENG_LOG_INFO, "renderer: vulkan device \"%s\", GPU zones %s", vk.device_name,
            vk.prof                           ? "on"
            : pr == MPROF_ERR_UNSUPPORTED     ? "off (profiling not built in, or no timestamps)"
                                              : "off (the GPU timeline could not be created)");
    return 0;
}

static void vk_shutdown(void)
{
    if (vk.dev) {
        finish_frames();
        vkDeviceWaitIdle(vk.dev);
        mprof_vk_context_destroy(vk.prof); /* uploads the timestamps not collected yet */
        vk.prof = NULL;
        VkPipeline pipes[3] = {vk.p_shadow, vk.p_scene, vk.p_post};
        for (int i = 0; i < 3; i++)
            if (pipes[i])
                vkDestroyPipeline(vk.dev, pipes[i], NULL);
        VkPipelineLayout pls[3] = {vk.pl_shadow, vk.pl_scene, vk.pl_post};
        for (int i = 0; i < 3; i++)
            if (pls[i])
                vkDestroyPipelineLayout(vk.dev, pls[i], NULL);
        if (vk.dpool)
            vkDestroyDescriptorPool(vk.dev, vk.dpool, NULL);
        if (vk.dsl_scene)
            vkDestroyDescriptorSetLayout(vk.dev, vk.dsl_scene, NULL);
        if (vk.dsl_post)
            vkDestroyDescriptorSetLayout(vk.dev, vk.dsl_post, NULL);
        if (vk.sampler)
            vkDestroySampler(vk.dev, vk.sampler, NULL);
        VkFramebuffer fbs[3] = {vk.fb_shadow, vk.fb_main, vk.fb_post};
        for (int i = 0; i < 3; i++)
            if (fbs[i])
                vkDestroyFramebuffer(vk.dev, fbs[i], NULL);
        VkRenderPass rps[3] = {vk.rp_shadow, vk.rp_main, vk.rp_post};
        for (int i = 0; i < 3; i++)
            if (rps[i])
                vkDestroyRenderPass(vk.dev, rps[i], NULL);
        free_image(&vk.shadow);
        free_image(&vk.hdr);
        free_image(&vk.depth);
        free_image(&vk.out);
        free_buffer(&vk.vbuf);
        free_buffer(&vk.ibuf);
        free_buffer(&vk.readback);
        for (int f = 0; f < FRAMES_IN_FLIGHT; f++) {
            vk_frame *fr = &vk.frames[f];
            free_buffer(&fr->ubo);
            free_buffer(&fr->instances);
            if (fr->fence)
                vkDestroyFence(vk.dev, fr->fence, NULL);
        }
        if (vk.pool)
            vkDestroyCommandPool(vk.dev, vk.pool, NULL);
        vkDestroyDevice(vk.dev, NULL);
    }
    if (vk.inst)
        vkDestroyInstance(vk.inst, NULL);
    free(vk.pixels);
    memset(&vk, 0, sizeof vk);
}

/* Makes a frame's instance buffer hold n instances (its fence has been waited for). */
static int reserve_instances(vk_frame *fr, uint32_t n)
{
    VkDeviceSize need = (VkDeviceSize)(n ? n : 1) * sizeof(render_instance);
    if (fr->instances.buf && fr->instances.size >= need)
        return 0;
    free_buffer(&fr->instances);
    return make_buffer(&fr->instances, need + need / 2, VK_BUFFER_USAGE_VERTEX_BUFFER_BIT);
}

/* Waits for a submitted frame. */
static void finish_frame(vk_frame *fr)
{
    if (!fr->pending)
        return;
    MPROF_ZONE_C("Renderer::gpu_wait", MPROF_COLOR_RENDERER);
    vkWaitForFences(vk.dev, 1, &fr->fence, VK_TRUE, UINT64_MAX);
    vkResetFences(vk.dev, 1, &fr->fence);
    fr->pending = 0;
    vk.have_frame = 1;
}

/* Finishes the frames in flight, oldest first. */
static void finish_frames(void)
{
    for (uint32_t i = 1; i <= FRAMES_IN_FLIGHT; i++)
        finish_frame(&vk.frames[(vk.slot + i) % FRAMES_IN_FLIGHT]);
}

static void draw_meshes(vk_frame *fr, const render_scene *sc, const uint32_t *inst_first, int n_meshes,
                        render_stats *out)
{
    VkDeviceSize zero = 0;
    vkCmdBindVertexBuffers(fr->cmd, 0, 1, &vk.vbuf.buf, &zero);
    vkCmdBindVertexBuffers(fr->cmd, 1, 1, &fr->instances.buf, &zero);
    vkCmdBindIndexBuffer(fr->cmd, vk.ibuf.buf, 0, VK_INDEX_TYPE_UINT16);
    for (int m = 0; m < n_meshes; m++)
        for (uint32_t first = 0; first < sc->n_inst[m]; first += RENDER_MAX_BATCH) {
            uint32_t n = sc->n_inst[m] - first < RENDER_MAX_BATCH ? sc->n_inst[m] - first
                                                                  : RENDER_MAX_BATCH;
            vkCmdDrawIndexed(fr->cmd, vk.index_count[m], n, vk.first_index[m],
                             (int32_t)vk.vertex_offset[m], inst_first[m] + first);
            out->draw_calls++;
            out->triangles += (uint64_t)n * (vk.index_count[m] / 3);
        }
}

/* Each pass is one GPU zone: the helper writes a timestamp when the zone opens and another when
 * the function returns, around the whole render pass. */
static void shadow_pass(vk_frame *fr, const render_scene *sc, const uint32_t *inst_first,
                        render_stats *out)
{
    MPROF_VK_ZONE_C(vk.prof, fr->cmd, "GPU::shadow_pass", MPROF_COLOR_RENDERER);
    VkClearValue clear = {.depthStencil = {1.0f, 0}};
    VkRenderPassBeginInfo rb = {.sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
                                .renderPass = vk.rp_shadow, .framebuffer = vk.fb_shadow,
                                .renderArea = {{0, 0}, {RENDER_SHADOW_SIZE, RENDER_SHADOW_SIZE}},
                                .clearValueCount = 1, .pClearValues = &clear};
    vkCmdBeginRenderPass(fr->cmd, &rb, VK_SUBPASS_CONTENTS_INLINE);
    vkCmdBindPipeline(fr->cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, vk.p_shadow);
    vkCmdPushConstants(fr->cmd, vk.pl_shadow, VK_SHADER_STAGE_VERTEX_BIT, 0, 64,
                       sc->light_view_proj.m);
    draw_meshes(fr, sc, inst_first, MESH_GROUND, out); /* the ground only receives shadows */
    vkCmdEndRenderPass(fr->cmd);
}

static void main_pass(vk_frame *fr, const render_scene *sc, const uint32_t *inst_first,
                      render_stats *out)
{
    MPROF_VK_ZONE_C(vk.prof, fr->cmd, "GPU::main_pass", MPROF_COLOR_RENDERER);
    VkClearValue clear[2] = {{.color = {{0.24f, 0.30f, 0.43f, 1.0f}}},
                             {.depthStencil = {1.0f, 0}}};
    VkRenderPassBeginInfo rb = {.sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
                                .renderPass = vk.rp_main, .framebuffer = vk.fb_main,
                                .renderArea = {{0, 0}, {(uint32_t)vk.w, (uint32_t)vk.h}},
                                .clearValueCount = 2, .pClearValues = clear};
    vkCmdBeginRenderPass(fr->cmd, &rb, VK_SUBPASS_CONTENTS_INLINE);
    vkCmdBindPipeline(fr->cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, vk.p_scene);
    vkCmdBindDescriptorSets(fr->cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, vk.pl_scene, 0, 1,
                            &fr->ds_scene, 0, NULL);
    draw_meshes(fr, sc, inst_first, MESH_COUNT, out);
    vkCmdEndRenderPass(fr->cmd);
}

static void post_pass(vk_frame *fr, render_stats *out)
{
    MPROF_VK_ZONE_C(vk.prof, fr->cmd, "GPU::post_pass", MPROF_COLOR_RENDERER);
    VkClearValue clear = {.color = {{0, 0, 0, 1.0f}}};
    VkRenderPassBeginInfo rb = {.sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
                                .renderPass = vk.rp_post, .framebuffer = vk.fb_post,
                                .renderArea = {{0, 0}, {(uint32_t)vk.w, (uint32_t)vk.h}},
                                .clearValueCount = 1, .pClearValues = &clear};
    vkCmdBeginRenderPass(fr->cmd, &rb, VK_SUBPASS_CONTENTS_INLINE);
    vkCmdBindPipeline(fr->cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, vk.p_post);
    vkCmdBindDescriptorSets(fr->cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, vk.pl_post, 0, 1,
                            &vk.ds_post, 0, NULL);
    vkCmdDraw(fr->cmd, 3, 1, 0, 0);
    out->draw_calls++;
    out->triangles++;
    vkCmdEndRenderPass(fr->cmd);
}

static void record(vk_frame *fr, const render_scene *sc, const uint32_t *inst_first,
                   render_stats *out)
{
    MPROF_ZONE_C("Renderer::record", MPROF_COLOR_RENDERER);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkBeginCommandBuffer(fr->cmd, &bi);
    /* Outside any render pass: uploads finished frames' timestamps, recycles their queries. */
    MPROF_VK_COLLECT(vk.prof, fr->cmd);
    shadow_pass(fr, sc, inst_first, out);
    main_pass(fr, sc, inst_first, out);
    post_pass(fr, out);
    vkEndCommandBuffer(fr->cmd);
}

static void vk_draw_frame(const render_scene *sc, render_stats *out)
{
    vk_frame *fr = &vk.frames[vk.slot];
    finish_frame(fr); /* the frame that last used this slot, FRAMES_IN_FLIGHT frames ago */
    uint32_t inst_first[MESH_COUNT], total = 0;
    for (int m = 0; m < MESH_COUNT; m++) {
        inst_first[m] = total;
        total += sc->n_inst[m];
    }
    {
        MPROF_ZONE_C("Renderer::upload", MPROF_COLOR_RENDERER);
        if (reserve_instances(fr, total)) {
            log_msg(ENG_LOG_ERROR, "renderer: vulkan: cannot grow the instance buffer");
            return;
        }
        for (int m = 0; m < MESH_COUNT; m++)
            memcpy((render_instance *)fr->instances.map + inst_first[m], sc->inst[m],
                   sc->n_inst[m] * sizeof(render_instance));
        scene_ubo *u = fr->ubo.map;
        memcpy(u->vp, sc->view_proj.m, sizeof u->vp);
        memcpy(u->light_vp, sc->light_view_proj.m, sizeof u->light_vp);
        u->light_dir[0] = sc->light_dir.x;
        u->light_dir[1] = sc->light_dir.y;
        u->light_dir[2] = sc->light_dir.z;
        u->light_dir[3] = 0;
    }
    record(fr, sc, inst_first, out);
    {
        MPROF_ZONE_C("Renderer::submit", MPROF_COLOR_RENDERER);
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                           .pCommandBuffers = &fr->cmd};
        if (vkQueueSubmit(vk.queue, 1, &si, fr->fence) != VK_SUCCESS) {
            log_msg(ENG_LOG_ERROR, "renderer: vulkan: vkQueueSubmit failed");
            return;
        }
    }
    fr->pending = 1;
    vk.slot = (vk.slot + 1) % FRAMES_IN_FLIGHT;
}

static const uint8_t *vk_pixels(int *out_w, int *out_h)
{
    *out_w = vk.w;
    *out_h = vk.h;
    finish_frames();
    if (!vk.have_frame)
        return NULL;
    /* The post pass left the output image in TRANSFER_SRC layout: copy it to the read-back
     * buffer and wait. */
    vk_frame *fr = &vk.frames[vk.slot];
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkBeginCommandBuffer(fr->cmd, &bi);
    VkBufferImageCopy region = {.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                .imageExtent = {(uint32_t)vk.w, (uint32_t)vk.h, 1}};
    vkCmdCopyImageToBuffer(fr->cmd, vk.out.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                           vk.readback.buf, 1, &region);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(fr->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                         1, &mb, 0, NULL, 0, NULL);
    vkEndCommandBuffer(fr->cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                       .pCommandBuffers = &fr->cmd};
    if (vkQueueSubmit(vk.queue, 1, &si, fr->fence) != VK_SUCCESS)
        return NULL;
    vkWaitForFences(vk.dev, 1, &fr->fence, VK_TRUE, UINT64_MAX);
    vkResetFences(vk.dev, 1, &fr->fence);
    memcpy(vk.pixels, vk.readback.map, (size_t)vk.w * (size_t)vk.h * 4);
    return vk.pixels;
}

const render_backend render_backend_vulkan = {"vulkan", vk_init, vk_draw_frame, vk_pixels,
                                              vk_shutdown};

#endif /* ENGINE_HAVE_VULKAN */
