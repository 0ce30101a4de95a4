# `cmake --install`: headers, libraries, the posenc command and a CMake package, so that a user's
# project gets posenc::reference, posenc::optimized, posenc::harness, posenc::plugin from
# find_package(posenc). Layer headers keep their include paths ("properties/harness.h") under
# include/posenc/.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(posenc_libraries posenc_contract posenc_reference posenc_optimized posenc_registry
                     posenc_harness posenc_plugin)
foreach(target ${posenc_libraries})
  string(REPLACE "posenc_" "" name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  add_library(posenc::${name} ALIAS ${target})
  target_include_directories(${target} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/posenc>)
endforeach()

install(TARGETS ${posenc_libraries} EXPORT posencTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS posenc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/posenc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(layer reference optimized properties plugin)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${layer})
    install(DIRECTORY ${layer} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/posenc
            FILES_MATCHING PATTERN "*.h" PATTERN "testdata" EXCLUDE)
  endif()
endforeach()

set(posenc_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/posenc)
install(EXPORT posencTargets NAMESPACE posenc:: DESTINATION ${posenc_cmake_dir})
configure_package_config_file(cmake/posencConfig.cmake.in
  ${PROJECT_BINARY_DIR}/posencConfig.cmake INSTALL_DESTINATION ${posenc_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/posencConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/posencConfig.cmake ${PROJECT_BINARY_DIR}/posencConfigVersion.cmake
        DESTINATION ${posenc_cmake_dir})

# A consumer project built against a fresh install of this tree.
add_test(NAME install.consumer
  COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR}
          -DCONSUMER_DIR=${PROJECT_SOURCE_DIR}/examples/consumer
          -DWORK_DIR=${PROJECT_BINARY_DIR}/install-test -DGENERATOR=${CMAKE_GENERATOR}
          -DCXX=${CMAKE_CXX_COMPILER} -DC=${CMAKE_C_COMPILER}
          -DCXX_FLAGS=${CMAKE_CXX_FLAGS} -DSANITIZE=${POSENC_SANITIZE}
          -P ${PROJECT_SOURCE_DIR}/cmake/test_consumer.cmake)
set_tests_properties(install.consumer PROPERTIES LABELS install)
