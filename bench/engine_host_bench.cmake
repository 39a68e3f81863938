# engine_host_bench: the host's time between an engine's steps over the hash lane (plain timers;
# see engine_host_bench.cpp). No GPU, no model.
if(TARGET lg_server)
  add_executable(engine_host_bench ${CMAKE_CURRENT_SOURCE_DIR}/engine_host_bench.cpp)
  target_include_directories(engine_host_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(engine_host_bench PRIVATE lg_server lg_warnings)
endif()
