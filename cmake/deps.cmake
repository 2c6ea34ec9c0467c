# Third-party libraries, all from Debian's packages. Non-header-only ones link statically so the
# binary runs on the H200 machine, which lacks Debian's -dev libraries (shared/GPU.md).
find_package(nlohmann_json 3.10 REQUIRED)
find_package(fmt 9 REQUIRED)
find_package(Threads REQUIRED)

find_path(PCRE2_INCLUDE_DIR pcre2.h REQUIRED)
find_library(PCRE2_STATIC_LIB NAMES libpcre2-8.a REQUIRED)
add_library(keel_pcre2 INTERFACE)
target_include_directories(keel_pcre2 INTERFACE ${PCRE2_INCLUDE_DIR})
target_link_libraries(keel_pcre2 INTERFACE ${PCRE2_STATIC_LIB})
target_compile_definitions(keel_pcre2 INTERFACE PCRE2_CODE_UNIT_WIDTH=8 PCRE2_STATIC)

find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(XXHASH_STATIC_LIB NAMES libxxhash.a REQUIRED)
add_library(keel_xxhash INTERFACE)
target_include_directories(keel_xxhash INTERFACE ${XXHASH_INCLUDE_DIR})
target_link_libraries(keel_xxhash INTERFACE ${XXHASH_STATIC_LIB})
