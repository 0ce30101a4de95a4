# ctest python.install: installs the python component into PREFIX and imports it from there.
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --component python
                        --prefix ${PREFIX} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "cmake --install --component python failed")
endif()
set(ENV{PYTHONPATH} ${PREFIX}/${PACKAGE_DIR})
execute_process(
  COMMAND ${PYTHON} -c "import numpy, posenc; assert posenc.__file__.startswith('${PREFIX}/'), posenc.__file__; q = numpy.ones((1, 1, 2), numpy.float32); print(posenc.__file__, posenc.reference.rope(q=q, positions=numpy.zeros(1, numpy.int64), rotary_dim=2).tolist())"
  WORKING_DIRECTORY ${PREFIX} RESULT_VARIABLE status)  # not the build tree's package in the cwd
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the installed posenc package does not import")
endif()
