# Writes OUT, a header defining STRATA_VERSION_STRING as "VERSION (COMMIT)", with the commit of
# the source tree SRC ("+" when it has uncommitted changes; "unknown" outside a git checkout).
# Run at every build (cli/CMakeLists.txt) and rewritten only when the text changes, so the
# binary names the commit it was built from without rebuilding anything when it did not move.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE failed ERROR_QUIET)
if(failed)
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(dirty)
    set(commit "${commit}+")
  endif()
endif()
set(text "#define STRATA_VERSION_STRING \"strata ${VERSION} (${commit})\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
