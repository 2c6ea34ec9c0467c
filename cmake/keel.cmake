# Helpers shared by every folder's CMakeLists.txt.

# Common warnings; -Werror when KEEL_WERROR is on (CI turns it on).
add_library(keel_warnings INTERFACE)
target_compile_options(keel_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${KEEL_WERROR}>>:-Werror>)

# keel_library(<folder> DEPS <keel_ libs and third-party targets>)
# One static library per src/ folder, sources globbed from that folder (and its subfolders unless
# they hold their own library). Include paths are rooted at src/.
function(keel_library name)
  cmake_parse_arguments(ARG "" "" "DEPS;SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    file(GLOB ARG_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  endif()
  if(NOT ARG_SOURCES)  # a folder whose sources have not landed yet
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/keel_${name}_empty.cc "")
    set(ARG_SOURCES ${CMAKE_CURRENT_BINARY_DIR}/keel_${name}_empty.cc)
  endif()
  add_library(keel_${name} STATIC ${ARG_SOURCES})
  target_include_directories(keel_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(keel_${name} PUBLIC ${ARG_DEPS} PRIVATE keel_warnings)
endfunction()

# keel_unit_tests(<folder> DEPS <libs>): one GoogleTest binary per folder from tests/unit/<folder>/*_test.cc.
function(keel_unit_tests folder)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/unit/${folder}/*_test.cc)
  if(NOT srcs)
    return()
  endif()
  string(REPLACE "/" "_" tname ${folder})
  add_executable(keel_${tname}_tests ${srcs})
  target_link_libraries(keel_${tname}_tests PRIVATE ${ARG_DEPS} GTest::gtest_main keel_warnings)
  target_include_directories(keel_${tname}_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(keel_${tname}_tests PRIVATE
    KEEL_SOURCE_DIR="${PROJECT_SOURCE_DIR}" KEEL_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(keel_${tname}_tests DISCOVERY_MODE PRE_TEST
    PROPERTIES ENVIRONMENT "KEEL_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()
