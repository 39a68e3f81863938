# cmake -DIN=script.py -DOUT=out.cpp -P embed_script.cmake: writes the script as the C++ string
# lg::chat::kJinjaRenderScript (a raw string literal; the script must not contain `)lgpy"`).
file(READ ${IN} text)
string(FIND "${text}" ")lgpy\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )lgpy\"")
endif()
file(WRITE ${OUT} "// Generated from ${IN} by embed_script.cmake; do not edit.\n"
                  "namespace lg::chat {\n"
                  "extern const char* const kJinjaRenderScript;\n"
                  "const char* const kJinjaRenderScript = R\"lgpy(${text})lgpy\";\n"
                  "}  // namespace lg::chat\n")
