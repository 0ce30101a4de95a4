# Installs the build tree into a fresh prefix, then configures, builds and runs three consumer
# projects against it (ctest install.consumer). None sets CMAKE_CXX_STANDARD: the compiler's
# default standard (g++ 12: C++17) gets C++20 from posenc's targets.
#   examples/consumer              every component; compiles every installed header against the
#                                  installed tree alone; a GoogleTest suite using posenc::check.
#   examples/consumer_kernels      COMPONENTS kernels only, configured with RapidCheck's, Eigen's and
#                                  fmt's package configs shadowed by poisoned ones that stop
#                                  configuring; a control that also asks for harness must hit them.
#   examples/consumer_own_headers  its own properties/compare.h on its include path.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
set(flags ${CXX_FLAGS})
if(SANITIZE)
  string(REPLACE "fuzzer-no-link," "" SANITIZE "${SANITIZE}")
  set(flags "${flags} -fsanitize=${SANITIZE}")
endif()
set(configure -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_C_COMPILER=${C}
    "-DCMAKE_CXX_FLAGS=${flags}" -DCMAKE_BUILD_TYPE=Release)

# The poison: a config file for each of the harness's dependencies, which stops configuring if it
# is read; <package>_DIR makes find_package read it before any other. The control: asking for the
# harness reads each one, so each poison is in the way of a search for its package.
set(poisoned -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
foreach(package rapidcheck Eigen3 fmt)
  file(WRITE ${WORK_DIR}/poison/${package}/${package}Config.cmake
       "message(FATAL_ERROR \"poisoned: find_package(${package}) was called\")\n")
  set(poison -D${package}_DIR=${WORK_DIR}/poison/${package})
  list(APPEND poisoned ${poison})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${EXAMPLES_DIR}/consumer_kernels
                          -B ${WORK_DIR}/control_${package} ${configure}
                          -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix ${poison}
                          -DPOSENC_COMPONENTS=harness
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(status EQUAL 0 OR NOT "${out}${err}" MATCHES "poisoned: find_package\\(${package}\\)")
    message(FATAL_ERROR "the poisoned ${package} was not in the way (${status}):\n${out}${err}")
  endif()
endforeach()

run(${CMAKE_COMMAND} -S ${EXAMPLES_DIR}/consumer_kernels -B ${WORK_DIR}/kernels ${configure}
    ${poisoned})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/kernels)
run(${WORK_DIR}/kernels/consumer_kernels)

foreach(project consumer consumer_own_headers)
  run(${CMAKE_COMMAND} -S ${EXAMPLES_DIR}/${project} -B ${WORK_DIR}/${project} ${configure}
      -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/${project})
endforeach()
run(${WORK_DIR}/consumer/consumer)
run(${WORK_DIR}/consumer/consumer_test)
run(${WORK_DIR}/consumer_own_headers/consumer_own_headers)
