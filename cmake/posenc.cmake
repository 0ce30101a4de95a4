# Small helpers shared by every directory's CMakeLists.txt.

# find_package, or stop configuring with the Debian package that provides it.
macro(posenc_require package debian_package)
  find_package(${package} ${ARGN} QUIET)
  if(NOT ${package}_FOUND)
    message(FATAL_ERROR "posenc needs ${package}: install the Debian package ${debian_package} "
                        "(apt-get install ${debian_package}), or run `make deps` as root.")
  endif()
endmacro()

# posenc_sources(<var>): this directory's .cc files, tests excluded.
function(posenc_sources var)
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER sources EXCLUDE REGEX "_test\\.cc$")
  set(${var} ${sources} PARENT_SCOPE)
endfunction()

# posenc_tests(LABEL <label> LIBS <libs...>): one GoogleTest binary per *_test.cc here.
# The fuzz build (POSENC_FUZZ) skips them: it runs the fuzz label only.
function(posenc_tests)
  if(POSENC_FUZZ)
    return()
  endif()
  cmake_parse_arguments(ARG "" "LABEL" "LIBS" ${ARGN})
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  get_filename_component(layer ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  foreach(src ${tests})
    get_filename_component(name ${src} NAME_WE)
    set(target ${layer}_${name})
    add_executable(${target} ${src})
    target_link_libraries(${target} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
    gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST PROPERTIES LABELS ${ARG_LABEL})
  endforeach()
endfunction()

# posenc_plugin_library(<name> <sources...>): a kernel plugin, built as a user would build one:
# a C99 shared library that sees include/posenc/plugin.h (and plugin/<family>.h) and DLPack,
# nothing else of posenc.
function(posenc_plugin_library name)
  add_library(${name} MODULE ${ARGN})
  set_target_properties(${name} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${name} PRIVATE dlpack::dlpack m)
endfunction()
