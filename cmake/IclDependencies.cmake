# icl-sweep's dependencies, found the standard CMake way so that module systems work (docs/install.md):
#   Eigen3  find_package(Eigen3 CONFIG) (Eigen3_DIR, Eigen3_ROOT, CMAKE_PREFIX_PATH), else Eigen/Dense on
#           an include path (EIGEN3_INCLUDE_DIR, or the EIGEN3_ROOT / EIGEN_ROOT / EIGEN_DIR / CPATH variables)
#   Boost   FindBoost / BoostConfig (BOOST_ROOT, Boost_DIR, CMAKE_PREFIX_PATH)
#   MPI     FindMPI (MPI_HOME, the mpicxx wrapper on PATH)
#   HDF5    FindHDF5, C only (HDF5_ROOT, HDF5_DIR, the h5cc / h5pcc wrapper on PATH, CMAKE_PREFIX_PATH);
#           the serial flavour preferred, the parallel one accepted (one rank writes); pkg-config only as a
#           last resort.
# Results: the imported targets Eigen3::Eigen, Boost::program_options, MPI::MPI_CXX and the interface
# target icl_hdf5 (HDF5's include directories, definitions and libraries, plus MPI's if HDF5 is parallel).

# <Package>_ROOT in upper case (BOOST_ROOT, EIGEN3_ROOT) as a search prefix too, on CMake >= 3.27.
if(POLICY CMP0144)
  cmake_policy(SET CMP0144 NEW)
endif()

# --- Eigen ------------------------------------------------------------------------------------------
find_package(Eigen3 3.3 QUIET NO_MODULE)
if(NOT TARGET Eigen3::Eigen)
  find_path(EIGEN3_INCLUDE_DIR NAMES Eigen/Dense
            HINTS ENV EIGEN3_ROOT ENV EIGEN_ROOT ENV EIGEN_DIR ENV EIGEN3_DIR ENV EIGEN_HOME
            PATHS ENV CPATH ENV C_INCLUDE_PATH ENV CPLUS_INCLUDE_PATH
            PATH_SUFFIXES include/eigen3 eigen3 include
            DOC "Directory holding Eigen/Dense (Eigen 3.3 or later)")
  if(NOT EIGEN3_INCLUDE_DIR)
    message(FATAL_ERROR "Eigen 3 not found: set Eigen3_DIR to the directory holding Eigen3Config.cmake, or "
                        "EIGEN3_INCLUDE_DIR to the directory holding Eigen/Dense (module systems: module load eigen)")
  endif()
  add_library(Eigen3::Eigen INTERFACE IMPORTED)
  set_target_properties(Eigen3::Eigen PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${EIGEN3_INCLUDE_DIR}")
  message(STATUS "Eigen3: headers in ${EIGEN3_INCLUDE_DIR} (no Eigen3Config.cmake)")
else()
  message(STATUS "Eigen3: ${Eigen3_DIR} (version ${Eigen3_VERSION})")
endif()

# The numerics rooms need nothing more (ICL_NUMERICS_ONLY: a cross build has no target MPI, HDF5 or Boost).
if(ICL_NUMERICS_ONLY)
  return()
endif()

# --- Boost, MPI -------------------------------------------------------------------------------------
find_package(Boost 1.70 REQUIRED COMPONENTS program_options)
find_package(MPI REQUIRED COMPONENTS CXX)

# --- HDF5 -------------------------------------------------------------------------------------------
# Serial first: one rank writes, so the parallel flavour only adds MPI to the link.  Debian can hold both
# flavours; there, when the user gave no hint at all, point FindHDF5 at the serial tree explicitly.
# Build directories configured when HDF5 came from pkg-config (pkg_check_modules(HDF5 ...)) hold its
# internal HDF5_* entries, HDF5_FOUND among them, which would mislead FindHDF5: drop them once.
if(DEFINED CACHE{HDF5_MODULE_NAME})
  get_property(_icl_cache_vars DIRECTORY PROPERTY CACHE_VARIABLES)
  foreach(_v IN LISTS _icl_cache_vars)
    get_property(_t CACHE ${_v} PROPERTY TYPE)
    if(_t STREQUAL "INTERNAL" AND _v MATCHES "^HDF5_|^__pkg_config_.*_HDF5$")
      unset(${_v} CACHE)
    endif()
  endforeach()
endif()
if(NOT DEFINED HDF5_PREFER_PARALLEL)
  set(HDF5_PREFER_PARALLEL FALSE)
endif()
set(_icl_hdf5_debian_serial "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/hdf5/serial")
set(_icl_hdf5_hinted FALSE)
foreach(_v HDF5_ROOT HDF5_DIR CMAKE_PREFIX_PATH)
  if(${_v} OR NOT "$ENV{${_v}}" STREQUAL "")
    set(_icl_hdf5_hinted TRUE)
  endif()
endforeach()
# A wrapper given or on PATH from a module (anything but the system's /usr/bin) also counts as a hint.
if(HDF5_C_COMPILER_EXECUTABLE)
  set(_icl_h5cc "${HDF5_C_COMPILER_EXECUTABLE}")
else()
  find_program(_icl_h5cc_path NAMES h5cc h5pcc)
  set(_icl_h5cc "${_icl_h5cc_path}")
  unset(_icl_h5cc_path CACHE)
endif()
if(_icl_h5cc AND NOT _icl_h5cc MATCHES "^/usr/bin/")
  set(_icl_hdf5_hinted TRUE)
endif()
if(NOT _icl_hdf5_hinted AND CMAKE_LIBRARY_ARCHITECTURE AND EXISTS "${_icl_hdf5_debian_serial}/include/hdf5.h")
  message(STATUS "HDF5: no HDF5_ROOT / HDF5_DIR given; using Debian's serial tree ${_icl_hdf5_debian_serial}")
  set(HDF5_ROOT "${_icl_hdf5_debian_serial}")
endif()

find_package(HDF5 COMPONENTS C)
add_library(icl_hdf5 INTERFACE)
if(HDF5_FOUND)
  if(TARGET hdf5::hdf5)
    target_link_libraries(icl_hdf5 INTERFACE hdf5::hdf5)
  else()
    target_include_directories(icl_hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
    target_compile_definitions(icl_hdf5 INTERFACE ${HDF5_C_DEFINITIONS} ${HDF5_DEFINITIONS})
    target_link_libraries(icl_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
  endif()
  set(_icl_hdf5_where "${HDF5_C_INCLUDE_DIRS}")
  if(NOT _icl_hdf5_where)
    set(_icl_hdf5_where "${HDF5_DIR}")
  endif()
else()
  # Last resort: pkg-config (Debian's name for the serial flavour first).
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_search_module(ICL_HDF5_PC QUIET IMPORTED_TARGET hdf5-serial hdf5)
  endif()
  if(NOT ICL_HDF5_PC_FOUND)
    message(FATAL_ERROR "HDF5 (C library) not found: set HDF5_ROOT to its installation prefix (the directory "
                        "holding include/hdf5.h and lib/libhdf5.*), or HDF5_DIR to the directory holding "
                        "hdf5-config.cmake, or put its h5cc wrapper on PATH (module systems: module load hdf5)")
  endif()
  target_link_libraries(icl_hdf5 INTERFACE PkgConfig::ICL_HDF5_PC)
  set(_icl_hdf5_where "pkg-config ${ICL_HDF5_PC_MODULE_NAME} ${ICL_HDF5_PC_INCLUDE_DIRS}")
  if(ICL_HDF5_PC_CFLAGS MATCHES "mpi" OR ICL_HDF5_PC_LIBRARIES MATCHES "mpi")
    set(HDF5_IS_PARALLEL TRUE)
  endif()
endif()
if(HDF5_IS_PARALLEL)
  # hdf5.h includes mpi.h in the parallel flavour: only src/io sees it (icl_io links icl_hdf5 privately).
  find_package(MPI REQUIRED COMPONENTS C CXX)
  target_link_libraries(icl_hdf5 INTERFACE MPI::MPI_C)
  message(STATUS "HDF5: parallel flavour (${_icl_hdf5_where}); accepted, icl-sweep writes from one rank")
else()
  message(STATUS "HDF5: serial (${_icl_hdf5_where})")
endif()
