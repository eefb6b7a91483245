# ctests `layering` and `metric_names` (tests/CMakeLists.txt): code the build must accept and code it must
# refuse.  ALLOWED (targets) must compile; each of REFUSED (target:message) must fail, and its message must
# be in the compiler's output (layering: the poison header's #error, cmake/IclRooms.cmake; metric_names: the
# refused line itself, which the compiler echoes under its error), in one build that goes on after errors.
# WHAT names the subject in the messages.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${ALLOWED}
                OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message("${out}")
  message(FATAL_ERROR "${WHAT}: code that must compile does not")
endif()

set(targets "")
foreach(arrow IN LISTS REFUSED)
  string(REGEX REPLACE ":.*" "" target "${arrow}")
  list(APPEND targets ${target})
endforeach()
if(GENERATOR MATCHES "Ninja")
  set(keep_going -k 0)
else()
  set(keep_going -k)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${targets} -- ${keep_going}
                OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
set(missed "")
foreach(arrow IN LISTS REFUSED)
  string(REGEX REPLACE "^[^:]*:" "" poison "${arrow}")
  string(FIND "${out}" "${poison}" at)
  if(at EQUAL -1)
    list(APPEND missed "${poison}")
  endif()
endforeach()
list(LENGTH ALLOWED n_allowed)
list(LENGTH REFUSED n_refused)
if(missed OR rc EQUAL 0)
  message("${out}")
  message(FATAL_ERROR "${WHAT}: the build did not refuse: ${missed}")
endif()
message("${WHAT}: ${n_allowed} targets compile; ${n_refused} refused, each with its message")
