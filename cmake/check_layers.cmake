# cmake -DMODULE=m -DALLOWED=m,a,b -DFILES=LIST -DROOT=SRC [-DSTAMP=FILE] -P check_layers.cmake
# Fail when a file named in LIST (one path a line) includes "tk/X/..." for a module X
# not in ALLOWED, or when a public header (under ROOT/include/) includes a header that is
# not public itself: the layers of docs/ARCHITECTURE.md, kept by the build
# (cmake/layers.cmake runs this before each module's target).
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" allowed "${ALLOWED}")
file(STRINGS "${FILES}" files)
set(errors "")
foreach(file IN LISTS files)
  if(NOT EXISTS "${file}")
    continue()  # removed since the last configure, which finds the files again
  endif()
  file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]tk/")
  file(RELATIVE_PATH shown "${ROOT}" "${file}")
  foreach(line IN LISTS includes)
    string(REGEX MATCH "[\"<](tk/([a-z_]+)/[^\">]+)[\">]" found "${line}")
    if(NOT found)
      continue()
    endif()
    set(header "${CMAKE_MATCH_1}")
    set(target "${CMAKE_MATCH_2}")
    if(NOT target IN_LIST allowed)
      string(REPLACE ";" ", " names "${allowed}")
      string(APPEND errors "${shown}: includes ${header}: module ${MODULE} may include only ${names}\n")
    elseif(shown MATCHES "^include/" AND NOT EXISTS "${ROOT}/include/${header}")
      string(APPEND errors "${shown}: includes ${header}, which is internal (not under include/)\n")
    endif()
  endforeach()
endforeach()
if(errors)
  # Plain message() first: unlike FATAL_ERROR's, its lines are not rewrapped.
  message("${errors}")
  message(FATAL_ERROR "Module ${MODULE} breaks the layers (docs/ARCHITECTURE.md, \"Targets\")")
endif()
if(STAMP)
  file(TOUCH "${STAMP}")
endif()
