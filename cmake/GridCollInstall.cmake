# Installation of GridColl (included from the top-level CMakeLists.txt after
# every target is defined):
#
#   bin/      gridrun, gridrelay, gridrelay-bench, gridcoll-info, gridwan
#   lib/      libgridcoll.so, libgridcoll.a and the static libraries
#             libgridcoll.a needs (libgridcoll_client.a, libgridcoll_sched.a,
#             libgridcoll_common.a); libgridrun-native.so where UCX's
#             headers were found (gridrun --native)
#   include/  gridcoll.h
#   lib/pkgconfig/gridcoll.pc
#   lib/cmake/GridColl/  GridCollConfig.cmake, GridCollConfigVersion.cmake,
#                        GridCollTargets.cmake (namespace GridColl::)
#
# `gridrun --preload` looks for libgridcoll.so in ../lib next to its own bin/
# directory, so the library directory defaults to `lib` for every prefix
# (GNUInstallDirs alone would pick lib/<multiarch> for /usr on Debian).

set(CMAKE_INSTALL_LIBDIR lib CACHE PATH "Object code libraries (lib)")
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(NOT CMAKE_INSTALL_LIBDIR STREQUAL "lib")
  message(WARNING "CMAKE_INSTALL_LIBDIR is '${CMAKE_INSTALL_LIBDIR}': "
          "the installed `gridrun --preload` looks for ../lib/libgridcoll.so "
          "and will not find the library")
endif()

set(GRIDCOLL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/GridColl)

# The libraries.  libgridcoll.a links the relay client, the intra-site
# schedules and the protocol code privately; a static link needs them too,
# so they are installed and exported alongside (as GridColl::gridcoll_client,
# GridColl::gridcoll_sched, GridColl::gridcoll_common).
#
# libgridcoll.so is exported as GridColl::gridcoll_shared; GridCollConfig.cmake
# wraps it as GridColl::gridcoll, which keeps it in the executable under the
# linker's --as-needed.
set_target_properties(gridcoll PROPERTIES EXPORT_NAME gridcoll_shared)
install(TARGETS gridcoll gridcoll_static
  EXPORT GridCollTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS gridcoll_client gridcoll_sched gridcoll_common
  EXPORT GridCollTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

get_target_property(_gc_lib_binary_dir gridcoll BINARY_DIR)
install(FILES ${_gc_lib_binary_dir}/include/gridcoll.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(TARGETS gridrun gridrelay gridrelay-bench gridcoll-info gridwan
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# `gridrun --native` looks for it in ../lib too.
if(TARGET gridrun-native)
  install(TARGETS gridrun-native LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# pkg-config.  The file finds the prefix from its own location (pcfiledir)
# when the directories are relative, so `cmake --install --prefix P` into
# any P gives a working file.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR
   IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(GRIDCOLL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(GRIDCOLL_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(GRIDCOLL_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH _gc_pc_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig"
       "/prefix")
  string(REGEX REPLACE "/$" "" _gc_pc_up "${_gc_pc_up}")
  set(GRIDCOLL_PC_PREFIX "\${pcfiledir}/${_gc_pc_up}")
  set(GRIDCOLL_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(GRIDCOLL_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/gridcoll.pc.in
               ${PROJECT_BINARY_DIR}/gridcoll.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gridcoll.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake package: find_package(GridColl) and GridColl::gridcoll.
install(EXPORT GridCollTargets
  NAMESPACE GridColl::
  FILE GridCollTargets.cmake
  DESTINATION ${GRIDCOLL_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/GridCollConfig.cmake.in
  ${PROJECT_BINARY_DIR}/GridCollConfig.cmake
  INSTALL_DESTINATION ${GRIDCOLL_INSTALL_CMAKEDIR})
# 0.x: minor versions may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/GridCollConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/GridCollConfig.cmake
              ${PROJECT_BINARY_DIR}/GridCollConfigVersion.cmake
  DESTINATION ${GRIDCOLL_INSTALL_CMAKEDIR})
