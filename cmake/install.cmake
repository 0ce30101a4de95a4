# `cmake --install`: the libraries, their public headers, the posenc command and a CMake package
# with three components (posencConfig.cmake.in):
#   kernels  posenc::contract, ::reference, ::optimized, ::registry (Highway, Threads)
#   harness  posenc::harness (+ RapidCheck, Eigen, fmt)
#   plugin   posenc::plugin (+ DLPack, libseccomp)
# Each component is its own export set, so find_package(posenc COMPONENTS kernels) never reads a
# target that names RapidCheck, Eigen or fmt.
#
# One include root. The targets export only <prefix>/include, and every installed header is
# included, by consumers and by the other installed headers, as "posenc/<path>": a consumer's own
# properties/compare.h cannot stand in for posenc's. The contract's headers live in include/posenc/
# already. A layer's public headers stay in their layer's directory (so the family sources and
# their ~150 includes of "reference/reference.h", "properties/harness.h", ... are unchanged) and
# are installed to include/posenc/<layer>/; in this tree, <build>/include/posenc/<layer> is a
# symlink to <layer>/ (top-level CMakeLists.txt), so the installed headers' own includes resolve
# here as they do installed (a file reached both ways is one file to #pragma once, in g++ and
# clang). Only the headers listed below are installed: the rest (GoogleTest
# helpers, Highway's -inl.h bodies, targets.h, thread_pool.h, a family's property internals, the
# plugin's process plumbing) are the tree's own. The consumer ctest includes every installed
# header against the installed tree alone, which fails if one includes a header left out or
# includes another by a path outside posenc/. A new public header is one line in the list, and
# includes the other installed headers as "posenc/<layer>/x.h".
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(posenc_public_headers
  reference/reference.h
  optimized/optimized.h
  properties/arena.h properties/check.h properties/compare.h properties/error_by_position.h
  properties/harness.h properties/property.h properties/report.h properties/validate.h
  plugin/isolate.h plugin/loader.h)
set(posenc_kernels_libraries posenc_contract posenc_reference posenc_optimized posenc_registry)
set(posenc_harness_libraries posenc_harness)
set(posenc_plugin_libraries posenc_plugin)

set(posenc_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/posenc)
foreach(component kernels harness plugin)
  foreach(target ${posenc_${component}_libraries})
    string(REPLACE "posenc_" "" name ${target})
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
    add_library(posenc::${name} ALIAS ${target})
    # The headers need C++20 (std::type_identity, designated initializers, ...).
    target_compile_features(${target} INTERFACE cxx_std_20)
  endforeach()
  install(TARGETS ${posenc_${component}_libraries} EXPORT posenc_${component}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT posenc_${component} NAMESPACE posenc:: DESTINATION ${posenc_cmake_dir}
          FILE posenc_${component}.cmake)
endforeach()
install(TARGETS posenc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/posenc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(header ${posenc_public_headers})
  get_filename_component(layer ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/posenc/${layer})
endforeach()

configure_package_config_file(cmake/posencConfig.cmake.in
  ${PROJECT_BINARY_DIR}/posencConfig.cmake INSTALL_DESTINATION ${posenc_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/posencConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/posencConfig.cmake ${PROJECT_BINARY_DIR}/posencConfigVersion.cmake
        DESTINATION ${posenc_cmake_dir})

# Three consumer projects built against a fresh install of this tree (cmake/test_consumer.cmake).
add_test(NAME install.consumer
  COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR}
          -DEXAMPLES_DIR=${PROJECT_SOURCE_DIR}/examples
          -DWORK_DIR=${PROJECT_BINARY_DIR}/install-test -DGENERATOR=${CMAKE_GENERATOR}
          -DCXX=${CMAKE_CXX_COMPILER} -DC=${CMAKE_C_COMPILER}
          -DCXX_FLAGS=${CMAKE_CXX_FLAGS} -DSANITIZE=${POSENC_SANITIZE}
          -P ${PROJECT_SOURCE_DIR}/cmake/test_consumer.cmake)
set_tests_properties(install.consumer PROPERTIES LABELS install)
