# Installation, GNUInstallDirs layout (cmake --install, make install PREFIX=..., the .deb):
#   bin/                      the tools (and mpi_train when MPI is built)
#   lib/                      libtkckpt.so (the C library), libtk_MODULE.a (one per module),
#                             libtk_dist_mpi.a (the MPI transport)
#   include/tk_ckpt*.h        the C interface; tk_ckpt*.f90, its Fortran modules as source
#   include/tk/<module>/*.h   the public headers of the C++ library (the include/ tree)
#   lib/cmake/tensorkit/      find_package(tensorkit): tensorkit::tensorkit, tensorkit::tkckpt
#   lib/pkgconfig/tkckpt.pc   pkg-config for the C library
#   share/man/man1/TOOL.1     man pages, and bash, zsh and fish completions under share/,
#                             generated from the tools' --help (scripts/gen-shell-docs.py)
include(CMakePackageConfigHelpers)

set(TK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tensorkit)

foreach(tool ${TK_TOOLS})
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
if(TARGET mpi_train)
  # It links libtkckpt, which a prefix outside the system folders holds beside bin/.
  file(RELATIVE_PATH tk_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
  set_target_properties(mpi_train PROPERTIES INSTALL_RPATH "$ORIGIN/${tk_bin_to_lib}")
  install(TARGETS mpi_train RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# ---- man pages and completions: generated from the tools' --help once they are linked ----
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(tk_docs ${PROJECT_BINARY_DIR}/share)
  set(tk_doc_tools)
  foreach(tool ${TK_TOOLS})
    if(TARGET ${tool})
      list(APPEND tk_doc_tools ${tool})
    endif()
  endforeach()
  # Sanitizer builds run the tools here too; a leak report must not fail the build.
  add_custom_command(OUTPUT ${tk_docs}/zsh/_tensorkit
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 ${Python3_EXECUTABLE}
      ${PROJECT_SOURCE_DIR}/scripts/gen-shell-docs.py --bin $<TARGET_FILE_DIR:tinfo> --out ${tk_docs} ${tk_doc_tools}
    DEPENDS ${tk_doc_tools} ${PROJECT_SOURCE_DIR}/scripts/gen-shell-docs.py
    COMMENT "Man pages and shell completions from the tools' --help" VERBATIM)
  add_custom_target(shell_docs ALL DEPENDS ${tk_docs}/zsh/_tensorkit)
  foreach(tool ${tk_doc_tools})
    install(FILES ${tk_docs}/man/man1/${tool}.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
    install(FILES ${tk_docs}/bash-completion/${tool} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
    install(FILES ${tk_docs}/fish/${tool}.fish DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
  endforeach()
  install(FILES ${tk_docs}/zsh/_tensorkit DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
else()
  message(STATUS "No Python 3: man pages and shell completions are not generated")
endif()

# ---- the C library: libtkckpt with tk_ckpt.h and tk_ckpt_dist.h, as C callers include them ----
install(TARGETS tkckpt EXPORT tensorkit-tkckpt LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# (tk_ckpt.h and tk_ckpt_dist.h are in the include/ tree, installed below)
# The Fortran modules are installed as source: they hold module procedures and a .mod file
# binds to one compiler's version, so callers compile them with their own program.
install(FILES lib/tk/ckpt/tk_ckpt.f90 lib/tk/ckpt/tk_ckpt_dist.f90 DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# ---- the C++ library: static libraries and the headers consumers include as "tk/io/npy.h" ----
# One archive per module (libtk_core.a ...) behind the umbrella tensorkit::tensorkit; the
# MPI transport apart (tensorkit::tk_dist_mpi). tk_bench, the benchmarks' harness, is not
# part of the installed library.
install(TARGETS tensorkit ${TK_LIBRARY_TARGETS} tk_dist_mpi EXPORT tensorkit-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The public headers are the include/ tree, as it is: what is internal to a module lives
# beside its sources in lib/tk/MODULE/ and is never installed. tests/install compiles every
# installed header, so one that needs a header or a dependency not installed fails there.
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# ---- CMake package ----
install(EXPORT tensorkit-targets NAMESPACE tensorkit:: DESTINATION ${TK_CMAKE_DIR})
install(EXPORT tensorkit-tkckpt NAMESPACE tensorkit:: DESTINATION ${TK_CMAKE_DIR})
configure_package_config_file(cmake/tensorkitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tensorkitConfig.cmake INSTALL_DESTINATION ${TK_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tensorkitConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tensorkitConfig.cmake ${PROJECT_BINARY_DIR}/tensorkitConfigVersion.cmake
  DESTINATION ${TK_CMAKE_DIR})

# ---- pkg-config: paths relative to the .pc file, so a prefix can be moved or packaged ----
file(RELATIVE_PATH TK_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" TK_PC_TO_PREFIX "${TK_PC_TO_PREFIX}")
get_target_property(TK_CKPT_LIB_VERSION tkckpt VERSION)
configure_file(cmake/tkckpt.pc.in ${PROJECT_BINARY_DIR}/tkckpt.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tkckpt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---- .deb (make package): everything above under /usr ----
set(TK_PACKAGE_MAINTAINER "tensorkit maintainers" CACHE STRING "Maintainer field of the .deb")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tensorkit)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Tensor file toolkit: conversion, decomposition, quantization, compression, checkpoints")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${TK_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Depends: the shared libraries the binaries load, as dpkg-shlibdeps finds their packages,
# and the OpenMP build of OpenBLAS their run path names (shlibdeps sees only libopenblas0,
# which any of the three builds satisfies).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS libopenblas0-openmp)
# libavcodec is opened at run time (lib/tk/codec/video.cpp), so shlibdeps does not see it:
# recommended, since only the video codecs need it.
string(REGEX MATCH "^[0-9]+" _tk_avcodec_major "${LIBAV_libavcodec_VERSION}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libavcodec${_tk_avcodec_major}")
# What find_package(tensorkit) needs to link the static library (tensorkit::tensorkit).
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "pkg-config, libhdf5-dev, libopenblas-openmp-dev, liblapacke-dev, \
libzstd-dev, libxxhash-dev, libre2-dev, libssl-dev, zlib1g-dev, libfmt-dev, nlohmann-json3-dev")
include(CPack)
