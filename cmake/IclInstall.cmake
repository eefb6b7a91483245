# cmake --install BUILD --prefix P lays out (docs/install.md):
#   P/bin/icl-sweep                          the executable; finds its presets as ../share/icl-sweep/presets
#   P/bin/icl-report, icl-halving-check, icl-lu-theory
#                                            find ../share/icl-sweep/python and ../libexec/icl-sweep/find-python
#   P/bin/icl-job                            a wrapper: share/icl-sweep/tools/icl-job with --bin P/bin/icl-sweep
#   P/libexec/icl-sweep/find-python
#   P/share/icl-sweep/presets/               jobs/presets, reduced/ included
#   P/share/icl-sweep/jobs/slurm, jobs/pbs   the job templates (icl-job reads them from ../jobs)
#   P/share/icl-sweep/python/icl_sweep       the report package (tools/python/icl_sweep)
# The relative layout (bin, share, libexec) is fixed: the executable and the scripts find each other by it,
# whatever the prefix, so an installed tree can be moved or copied as a whole.
set(ICL_SHARE share/icl-sweep)

install(TARGETS icl-sweep RUNTIME DESTINATION bin)
install(DIRECTORY jobs/presets/ DESTINATION ${ICL_SHARE}/presets)
install(DIRECTORY jobs/slurm jobs/pbs DESTINATION ${ICL_SHARE}/jobs)
install(DIRECTORY tools/python/icl_sweep DESTINATION ${ICL_SHARE}/python
        PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)
install(PROGRAMS tools/icl-report tools/icl-halving-check tools/icl-lu-theory tools/icl-costs DESTINATION bin)
install(PROGRAMS tools/find-python DESTINATION libexec/icl-sweep)

# tools/icl-job reads the job templates from its own ../jobs, so it lives in share/icl-sweep/tools; bin/icl-job
# calls it with the installed executable as the default --bin (a later --bin still wins).
set(_icl_job_wrapper ${CMAKE_BINARY_DIR}/install/icl-job)
file(WRITE ${_icl_job_wrapper} [=[#!/usr/bin/env bash
# icl-job, installed: runs share/icl-sweep/tools/icl-job (which reads the job templates from
# share/icl-sweep/jobs) with this installation's icl-sweep as the default --bin.  icl-job -h: the options.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
exec "$here/../share/icl-sweep/tools/icl-job" --bin "$here/icl-sweep" "$@"
]=])
install(PROGRAMS tools/icl-job DESTINATION ${ICL_SHARE}/tools)
install(PROGRAMS ${_icl_job_wrapper} DESTINATION bin)
