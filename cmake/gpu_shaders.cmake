# mprof_gpu_shaders(TARGET): compiles tests/shaders/gpu_work.{comp,vert,frag} to SPIR-V C arrays
# (spv_gpu_work_<stage>.h, arrays spv_<stage>) in the current binary directory with
# glslangValidator, and adds them to TARGET's sources and include path. Used by the Vulkan test
# and benchmark; callers check MPROF_GLSLANG first.
find_program(MPROF_GLSLANG glslangValidator)
function(mprof_gpu_shaders target)
  set(headers)
  foreach(stage comp vert frag)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/spv_gpu_work_${stage}.h)
    add_custom_command(OUTPUT ${out}
      COMMAND ${MPROF_GLSLANG} -V --quiet --vn spv_${stage} -o ${out}
              ${PROJECT_SOURCE_DIR}/tests/shaders/gpu_work.${stage}
      DEPENDS ${PROJECT_SOURCE_DIR}/tests/shaders/gpu_work.${stage}
      COMMENT "SPIR-V: gpu_work.${stage}")
    list(APPEND headers ${out})
  endforeach()
  target_sources(${target} PRIVATE ${headers})
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
endfunction()
