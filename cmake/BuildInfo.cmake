# Writes the build's identity header (cmake/build_info.hpp.in) at every build, not only at configure time, so a
# binary rebuilt after a commit names that commit: its git revision, "-dirty" when tracked files differ from it.
# The header is rewritten only when its text changes (configure_file), so an unchanged tree recompiles nothing.
#   cmake -DSOURCE_DIR=.. -DTEMPLATE=.. -DOUTPUT=.. -DPROJECT_VERSION=.. -DICL_BUILD_FLAGS=.. -P BuildInfo.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE ICL_GIT_REV OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE ICL_GIT_DIRTY OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT ICL_GIT_REV)
  set(ICL_GIT_REV "unknown")
elseif(ICL_GIT_DIRTY)
  string(APPEND ICL_GIT_REV "-dirty")
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
