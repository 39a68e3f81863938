# compile-startup-bench: the CPU side of the compiled lane's start-up (lower, lift, fuse, emit,
# NVRTC with its cache) for a config.json, phase by phase. Needs NVRTC, no GPU.
if(LG_HAVE_CUDA AND TARGET lg_emit_nvrtc AND TARGET lg_runtime AND TARGET lg_lang)
  add_executable(compile-startup-bench ${CMAKE_CURRENT_SOURCE_DIR}/compile_startup_bench.cpp)
  target_link_libraries(compile-startup-bench PRIVATE lg_runtime lg_emit lg_emit_nvrtc lg_model lg_support lg_warnings)
endif()
