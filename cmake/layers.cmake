# tk_check_layers(MODULE ALLOWED...): building tk_MODULE first checks every source and
# header of the module (lib/tk/MODULE/, include/tk/MODULE/) against the modules it may
# include, itself and ALLOWED, and fails naming the include that is not allowed. The
# targets' link lines cannot catch an upward include alone: every module's headers sit
# under the same two include roots. The files are found again at each configure.
function(tk_check_layers module)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/lib/tk/${module}/*.h ${PROJECT_SOURCE_DIR}/lib/tk/${module}/*.cpp
    ${PROJECT_SOURCE_DIR}/lib/tk/${module}/*.cu ${PROJECT_SOURCE_DIR}/include/tk/${module}/*.h)
  set(list_file ${PROJECT_BINARY_DIR}/layers/${module}.files)
  set(stamp ${PROJECT_BINARY_DIR}/layers/${module}.stamp)
  string(REPLACE ";" "\n" lines "${files}")
  file(CONFIGURE OUTPUT ${list_file} CONTENT "${lines}\n")
  string(REPLACE ";" "," allowed "${module};${ARGN}")
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DMODULE=${module} -DALLOWED=${allowed} -DFILES=${list_file}
      -DROOT=${PROJECT_SOURCE_DIR} -DSTAMP=${stamp} -P ${PROJECT_SOURCE_DIR}/cmake/check_layers.cmake
    DEPENDS ${files} ${list_file} ${PROJECT_SOURCE_DIR}/cmake/check_layers.cmake
    COMMENT "Checking the includes of module ${module}" VERBATIM)
  add_custom_target(tk_${module}_layers DEPENDS ${stamp})
  add_dependencies(tk_${module} tk_${module}_layers)
endfunction()
