# OpenAI request body fuzz target (see request_fuzz.cpp); seeds and kept crashers live in
# corpus/request_fuzz/.
lg_add_fuzzer(request_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/request_fuzz.cpp LIBS lg_server_request)
