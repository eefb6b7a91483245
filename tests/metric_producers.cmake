# ctest `metric_producers`: the numerics rooms that produce metrics (analysis, train, run) name them only
# through Named (analysis/metrics.hpp), never by subscripting or filling an Analysis's maps themselves,
# so every name they write passes the registry's types.  Lists each offending line.
file(GLOB_RECURSE sources ${SOURCE_DIR}/src/analysis/*.cpp ${SOURCE_DIR}/src/train/*.cpp ${SOURCE_DIR}/src/run/*.cpp
     ${SOURCE_DIR}/include/icl/analysis/*.hpp ${SOURCE_DIR}/include/icl/train/*.hpp ${SOURCE_DIR}/include/icl/run/*.hpp)
set(bypass "(metrics|series)(\\[|\\.(emplace|try_emplace|insert|at|operator\\[\\])[ (])")
set(found "")
foreach(f IN LISTS sources)
  file(STRINGS ${f} lines REGEX "${bypass}")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^ *//")
      string(APPEND found "\n  ${f}: ${line}")
    endif()
  endforeach()
endforeach()
list(LENGTH sources n)
if(found)
  message(FATAL_ERROR "metric names written around Named (analysis/metrics.hpp):${found}")
endif()
message("${n} producer sources write metric names only through Named")
