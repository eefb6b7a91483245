# The rooms of the house and the arrows between them (../shared/STYLE.md: one room per concern, its own
# target).  A room is src/<room>/*.cpp with its headers in include/icl/<room>/; it may include its own
# headers and those of the rooms it depends on, directly or through another room, and nothing else.
# The build enforces it: every other room's headers have a poison copy (an #error naming the arrow) first
# on the room's include path, so `#include "icl/analysis/gdpp.hpp"` in src/train/ does not compile.
# tests/test_refused.cmake (ctest layering) compiles every forbidden arrow and checks that each one fails.

# Every room, lowest first.  The numerics (Eigen only) are the first six.
set(ICL_ROOMS base data model train analysis run sweep parallel io cli)

# icl_room(<room> [DEPENDS <room>...] [LIBS <target>...] [PRIVATE_LIBS <target>...] [PURE])
# creates the static library icl_<room>, linked to the rooms it depends on (and LIBS), with the poison
# headers of every room it may not see; PURE rooms are also refused MPI, HDF5 and Boost (cmake/poison).
function(icl_room room)
  cmake_parse_arguments(R "PURE" "" "DEPENDS;LIBS;PRIVATE_LIBS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${room}/*.cpp)
  add_library(icl_${room} STATIC ${sources})
  target_include_directories(icl_${room} PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/generated)
  set(allowed ${room})
  foreach(dep IN LISTS R_DEPENDS)
    target_link_libraries(icl_${room} PUBLIC icl_${dep})
    get_property(dep_allowed GLOBAL PROPERTY ICL_ROOM_${dep}_ALLOWED)
    list(APPEND allowed ${dep_allowed})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  target_link_libraries(icl_${room} PUBLIC ${R_LIBS} PRIVATE ${R_PRIVATE_LIBS} icl_warnings)

  set(poison ${PROJECT_BINARY_DIR}/poison/${room})
  file(REMOVE_RECURSE ${poison})
  set(forbidden "")
  foreach(other IN LISTS ICL_ROOMS)
    if(other IN_LIST allowed)
      continue()
    endif()
    list(APPEND forbidden ${other})
    file(GLOB headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/include/icl/${other}
         ${PROJECT_SOURCE_DIR}/include/icl/${other}/*.hpp)
    foreach(h IN LISTS headers)
      file(WRITE ${poison}/icl/${other}/${h}
           "#error \"room '${room}' may not include icl/${other}/${h}: it sees only ${allowed} (cmake/IclRooms.cmake)\"\n")
    endforeach()
  endforeach()
  target_include_directories(icl_${room} BEFORE PRIVATE ${poison})
  if(R_PURE)
    target_include_directories(icl_${room} BEFORE PRIVATE ${PROJECT_SOURCE_DIR}/cmake/poison)
  endif()
  set_property(GLOBAL PROPERTY ICL_ROOM_${room}_ALLOWED ${allowed})
  set_property(GLOBAL PROPERTY ICL_ROOM_${room}_FORBIDDEN ${forbidden})
  set_property(GLOBAL PROPERTY ICL_ROOM_${room}_POISON ${poison})
endfunction()
