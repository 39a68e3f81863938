# compile_time_bench: compile time per phase (check+lower, lift, fuse, emit, explain) for long
# generated programs and for one .lg program with a config (see compile_time_bench.cpp).
if(TARGET lg_emit AND TARGET lg_lang)
  add_executable(compile_time_bench ${CMAKE_CURRENT_SOURCE_DIR}/compile_time_bench.cpp)
  target_include_directories(compile_time_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests)  # common/deep_programs.h
  target_link_libraries(compile_time_bench PRIVATE lg_emit lg_lift lg_lang lg_ir nlohmann_json::nlohmann_json lg_warnings)
endif()
