/*
 * gpu_vk_util.h - a minimal offscreen Vulkan renderer shared by test_gpu_vulkan and bench_gpu:
 * instance, device (optionally with VK_EXT_calibrated_timestamps and hostQueryReset), a compute
 * pipeline over a storage buffer, a render pass drawing one full-screen triangle into an
 * offscreen image, two command buffers and fences. Shaders: tests/shaders/gpu_work.*.
 */
#ifndef MPROF_TESTS_GPU_VK_UTIL_H
#define MPROF_TESTS_GPU_VK_UTIL_H

#include "mprof/vulkan.h"
#include "spv_gpu_work_comp.h"
#include "spv_gpu_work_frag.h"
#include "spv_gpu_work_vert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ELEMENTS (64 * 256)
#define TARGET 256

typedef struct vkr {
    VkInstance inst;
    VkPhysicalDevice pd;
    VkDevice dev;
    VkQueue queue;
    uint32_t family;
    int calib_ext, host_reset;
    VkBuffer buf;
    VkDeviceMemory buf_mem;
    VkDescriptorSetLayout dsl;
    VkDescriptorPool dpool;
    VkDescriptorSet set;
    VkPipelineLayout cpl, gpl;
    VkPipeline cpipe, gpipe;
    VkShaderModule comp, vert, frag;
    VkImage img;
    VkDeviceMemory img_mem;
    VkImageView view;
    VkRenderPass rp;
    VkFramebuffer fb;
    VkCommandPool pool;
    VkCommandBuffer cmd[2];
    VkFence fence[2];
} vkr;


#define VK_OK(x)                                                                                   \
    do {                                                                                           \
        VkResult r_ = (x);                                                                         \
        if (r_ != VK_SUCCESS) {                                                                    \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, (int)r_);                  \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static inline int has_device_ext(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
    VkExtensionProperties *e = calloc(n, sizeof *e);
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e);
    int found = 0;
    for (uint32_t i = 0; i < n; i++)
        found |= strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

static inline int memory_type(const vkr *v, uint32_t bits, VkMemoryPropertyFlags want)
{
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(v->pd, &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want)
            return (int)i;
    return -1;
}

static inline VkShaderModule make_module(vkr *v, const uint32_t *code, size_t bytes)
{
    VkShaderModuleCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    ci.codeSize = bytes;
    ci.pCode = code;
    VkShaderModule m = VK_NULL_HANDLE;
    if (vkCreateShaderModule(v->dev, &ci, NULL, &m) != VK_SUCCESS)
        return VK_NULL_HANDLE;
    return m;
}

/* 0 ok, 1 no Vulkan device (skip), -1 failure. */
static inline int vkr_init(vkr *v, int want_calibration, int want_host_reset)
{
    memset(v, 0, sizeof *v);
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "test_gpu_vulkan";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    if (vkCreateInstance(&ici, NULL, &v->inst) != VK_SUCCESS)
        return 1;
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(v->inst, &n, NULL);
    if (n == 0)
        return 1;
    VkPhysicalDevice pds[8];
    n = n > 8 ? 8 : n;
    vkEnumeratePhysicalDevices(v->inst, &n, pds);
    v->pd = pds[0];
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(v->pd, &props);
    fprintf(stderr, "device: %s (timestampPeriod %g ns)\n", props.deviceName,
            (double)props.limits.timestampPeriod);

    uint32_t nf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(v->pd, &nf, NULL);
    VkQueueFamilyProperties fam[16];
    nf = nf > 16 ? 16 : nf;
    vkGetPhysicalDeviceQueueFamilyProperties(v->pd, &nf, fam);
    v->family = UINT32_MAX;
    for (uint32_t i = 0; i < nf; i++) {
        VkQueueFlags f = fam[i].queueFlags;
        if ((f & VK_QUEUE_GRAPHICS_BIT) && (f & VK_QUEUE_COMPUTE_BIT) &&
            fam[i].timestampValidBits > 0) {
            v->family = i;
            break;
        }
    }
    if (v->family == UINT32_MAX)
        return 1;

    const char *exts[1];
    uint32_t n_ext = 0;
    if (want_calibration &&
        mprof_vk_has_calibrated_timestamps(v->inst, v->pd, NULL) &&
        has_device_ext(v->pd, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME)) {
        exts[n_ext++] = VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
        v->calib_ext = 1;
    }
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f2.pNext = &f12;
    if (props.apiVersion >= VK_API_VERSION_1_2)
        vkGetPhysicalDeviceFeatures2(v->pd, &f2);
    VkPhysicalDeviceVulkan12Features enable12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    if (want_host_reset && f12.hostQueryReset) {
        enable12.hostQueryReset = VK_TRUE;
        v->host_reset = 1;
    }
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = v->family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = v->host_reset ? &enable12 : NULL;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = n_ext;
    dci.ppEnabledExtensionNames = exts;
    VK_OK(vkCreateDevice(v->pd, &dci, NULL, &v->dev));
    vkGetDeviceQueue(v->dev, v->family, 0, &v->queue);

    /* Storage buffer for the compute passes. */
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = ELEMENTS * sizeof(float);
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VK_OK(vkCreateBuffer(v->dev, &bci, NULL, &v->buf));
    VkMemoryRequirements mr;
    vkGetBufferMemoryRequirements(v->dev, v->buf, &mr);
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = mr.size;
    int mt = memory_type(v, mr.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (mt < 0)
        return -1;
    mai.memoryTypeIndex = (uint32_t)mt;
    VK_OK(vkAllocateMemory(v->dev, &mai, NULL, &v->buf_mem));
    VK_OK(vkBindBufferMemory(v->dev, v->buf, v->buf_mem, 0));

    VkDescriptorSetLayoutBinding b = {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                      VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo dslci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dslci.bindingCount = 1;
    dslci.pBindings = &b;
    VK_OK(vkCreateDescriptorSetLayout(v->dev, &dslci, NULL, &v->dsl));
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpci.maxSets = 1;
    dpci.poolSizeCount = 1;
    dpci.pPoolSizes = &ps;
    VK_OK(vkCreateDescriptorPool(v->dev, &dpci, NULL, &v->dpool));
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dsai.descriptorPool = v->dpool;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &v->dsl;
    VK_OK(vkAllocateDescriptorSets(v->dev, &dsai, &v->set));
    VkDescriptorBufferInfo dbi = {v->buf, 0, VK_WHOLE_SIZE};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = v->set;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &dbi;
    vkUpdateDescriptorSets(v->dev, 1, &w, 0, NULL);

    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    plci.setLayoutCount = 1;
    plci.pSetLayouts = &v->dsl;
    plci.pushConstantRangeCount = 1;
    plci.pPushConstantRanges = &pcr;
    VK_OK(vkCreatePipelineLayout(v->dev, &plci, NULL, &v->cpl));
    v->comp = make_module(v, spv_comp, sizeof spv_comp);
    v->vert = make_module(v, spv_vert, sizeof spv_vert);
    v->frag = make_module(v, spv_frag, sizeof spv_frag);
    if (!v->comp || !v->vert || !v->frag)
        return -1;
    VkComputePipelineCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpci.stage.module = v->comp;
    cpci.stage.pName = "main";
    cpci.layout = v->cpl;
    VK_OK(vkCreateComputePipelines(v->dev, VK_NULL_HANDLE, 1, &cpci, NULL, &v->cpipe));

    /* Offscreen color target and a render pass drawing one full-screen triangle into it. */
    VkImageCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ii.imageType = VK_IMAGE_TYPE_2D;
    ii.format = VK_FORMAT_R8G8B8A8_UNORM;
    ii.extent = (VkExtent3D){TARGET, TARGET, 1};
    ii.mipLevels = 1;
    ii.arrayLayers = 1;
    ii.samples = VK_SAMPLE_COUNT_1_BIT;
    ii.tiling = VK_IMAGE_TILING_OPTIMAL;
    ii.usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT;
    VK_OK(vkCreateImage(v->dev, &ii, NULL, &v->img));
    vkGetImageMemoryRequirements(v->dev, v->img, &mr);
    mai.allocationSize = mr.size;
    mt = memory_type(v, mr.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (mt < 0)
        return -1;
    mai.memoryTypeIndex = (uint32_t)mt;
    VK_OK(vkAllocateMemory(v->dev, &mai, NULL, &v->img_mem));
    VK_OK(vkBindImageMemory(v->dev, v->img, v->img_mem, 0));
    VkImageViewCreateInfo ivci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    ivci.image = v->img;
    ivci.viewType = VK_IMAGE_VIEW_TYPE_2D;
    ivci.format = ii.format;
    ivci.subresourceRange = (VkImageSubresourceRange){VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    VK_OK(vkCreateImageView(v->dev, &ivci, NULL, &v->view));
    VkAttachmentDescription att = {0};
    att.format = ii.format;
    att.samples = VK_SAMPLE_COUNT_1_BIT;
    att.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
    att.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    att.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    att.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    att.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    att.finalLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
    VkAttachmentReference ref = {0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkSubpassDescription sub = {0};
    sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    sub.colorAttachmentCount = 1;
    sub.pColorAttachments = &ref;
    VkRenderPassCreateInfo rpci = {.sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    rpci.attachmentCount = 1;
    rpci.pAttachments = &att;
    rpci.subpassCount = 1;
    rpci.pSubpasses = &sub;
    VK_OK(vkCreateRenderPass(v->dev, &rpci, NULL, &v->rp));
    VkFramebufferCreateInfo fbci = {.sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
    fbci.renderPass = v->rp;
    fbci.attachmentCount = 1;
    fbci.pAttachments = &v->view;
    fbci.width = TARGET;
    fbci.height = TARGET;
    fbci.layers = 1;
    VK_OK(vkCreateFramebuffer(v->dev, &fbci, NULL, &v->fb));

    VkPushConstantRange gpcr = {VK_SHADER_STAGE_FRAGMENT_BIT, 0, 4};
    VkPipelineLayoutCreateInfo gplci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    gplci.pushConstantRangeCount = 1;
    gplci.pPushConstantRanges = &gpcr;
    VK_OK(vkCreatePipelineLayout(v->dev, &gplci, NULL, &v->gpl));
    VkPipelineShaderStageCreateInfo st[2] = {
        {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_VERTEX_BIT,
         v->vert, "main", NULL},
        {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0,
         VK_SHADER_STAGE_FRAGMENT_BIT, v->frag, "main", NULL}};
    VkPipelineVertexInputStateCreateInfo vi = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
    VkPipelineInputAssemblyStateCreateInfo ia = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
    ia.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
    VkViewport vp = {0, 0, TARGET, TARGET, 0, 1};
    VkRect2D sc = {{0, 0}, {TARGET, TARGET}};
    VkPipelineViewportStateCreateInfo vps = {.sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
    vps.viewportCount = 1;
    vps.pViewports = &vp;
    vps.scissorCount = 1;
    vps.pScissors = &sc;
    VkPipelineRasterizationStateCreateInfo rs = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
    rs.polygonMode = VK_POLYGON_MODE_FILL;
    rs.cullMode = VK_CULL_MODE_NONE;
    rs.lineWidth = 1.0f;
    VkPipelineMultisampleStateCreateInfo ms = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
    ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
    VkPipelineColorBlendAttachmentState cba = {0};
    cba.colorWriteMask = 0xf;
    VkPipelineColorBlendStateCreateInfo cb = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
    cb.attachmentCount = 1;
    cb.pAttachments = &cba;
    VkGraphicsPipelineCreateInfo gpci = {.sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
    gpci.stageCount = 2;
    gpci.pStages = st;
    gpci.pVertexInputState = &vi;
    gpci.pInputAssemblyState = &ia;
    gpci.pViewportState = &vps;
    gpci.pRasterizationState = &rs;
    gpci.pMultisampleState = &ms;
    gpci.pColorBlendState = &cb;
    gpci.layout = v->gpl;
    gpci.renderPass = v->rp;
    VK_OK(vkCreateGraphicsPipelines(v->dev, VK_NULL_HANDLE, 1, &gpci, NULL, &v->gpipe));

    VkCommandPoolCreateInfo cpoolci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpoolci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    cpoolci.queueFamilyIndex = v->family;
    VK_OK(vkCreateCommandPool(v->dev, &cpoolci, NULL, &v->pool));
    VkCommandBufferAllocateInfo cbai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cbai.commandPool = v->pool;
    cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cbai.commandBufferCount = 2;
    VK_OK(vkAllocateCommandBuffers(v->dev, &cbai, v->cmd));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    fci.flags = VK_FENCE_CREATE_SIGNALED_BIT;
    for (int i = 0; i < 2; i++)
        VK_OK(vkCreateFence(v->dev, &fci, NULL, &v->fence[i]));
    return 0;
}

static inline void vkr_free(vkr *v)
{
    if (v->dev) {
        vkDeviceWaitIdle(v->dev);
        for (int i = 0; i < 2; i++)
            vkDestroyFence(v->dev, v->fence[i], NULL);
        vkDestroyCommandPool(v->dev, v->pool, NULL);
        vkDestroyPipeline(v->dev, v->gpipe, NULL);
        vkDestroyPipeline(v->dev, v->cpipe, NULL);
        vkDestroyPipelineLayout(v->dev, v->gpl, NULL);
        vkDestroyPipelineLayout(v->dev, v->cpl, NULL);
        vkDestroyShaderModule(v->dev, v->comp, NULL);
        vkDestroyShaderModule(v->dev, v->vert, NULL);
        vkDestroyShaderModule(v->dev, v->frag, NULL);
        vkDestroyFramebuffer(v->dev, v->fb, NULL);
        vkDestroyRenderPass(v->dev, v->rp, NULL);
        vkDestroyImageView(v->dev, v->view, NULL);
        vkDestroyImage(v->dev, v->img, NULL);
        vkFreeMemory(v->dev, v->img_mem, NULL);
        vkDestroyDescriptorPool(v->dev, v->dpool, NULL);
        vkDestroyDescriptorSetLayout(v->dev, v->dsl, NULL);
        vkDestroyBuffer(v->dev, v->buf, NULL);
        vkFreeMemory(v->dev, v->buf_mem, NULL);
        vkDestroyDevice(v->dev, NULL);
    }
    if (v->inst)
        vkDestroyInstance(v->inst, NULL);
    memset(v, 0, sizeof *v);
}

static inline void compute_pass(vkr *v, VkCommandBuffer cmd, uint32_t iterations)
{
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, v->cpipe);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, v->cpl, 0, 1, &v->set, 0, NULL);
    uint32_t pc[2] = {ELEMENTS, iterations};
    vkCmdPushConstants(cmd, v->cpl, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
    vkCmdDispatch(cmd, ELEMENTS / 64, 1, 1);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

static inline void render_pass(vkr *v, VkCommandBuffer cmd, uint32_t iterations)
{
    VkClearValue clear = {{{0, 0, 0, 1}}};
    VkRenderPassBeginInfo rbi = {.sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
    rbi.renderPass = v->rp;
    rbi.framebuffer = v->fb;
    rbi.renderArea = (VkRect2D){{0, 0}, {TARGET, TARGET}};
    rbi.clearValueCount = 1;
    rbi.pClearValues = &clear;
    vkCmdBeginRenderPass(cmd, &rbi, VK_SUBPASS_CONTENTS_INLINE);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, v->gpipe);
    vkCmdPushConstants(cmd, v->gpl, VK_SHADER_STAGE_FRAGMENT_BIT, 0, 4, &iterations);
    vkCmdDraw(cmd, 3, 1, 0, 0);
    vkCmdEndRenderPass(cmd);
}

#endif
