# Installation of GridColl (included from the top-level CMakeLists.txt after
# every target is defined):
#
#   bin/      gridrun, gridrelay, gridrelay-bench, gridcoll-info, gridwan,
#             gridcoll-probe (run by `gridrun --probe`), gridcoll-sched
#   lib/      libgridcoll.so, libgridcoll.a and the static libraries
#             libgridcoll.a needs (libgridcoll_client.a, libgridcoll_sched.a,
#             libgridcoll_common.a); libgridrun-native.so where UCX's
#             headers were found (gridrun --native)
#   include/  gridcoll.h
#   lib/pkgconfig/gridcoll.pc
#   lib/cmake/GridColl/  GridCollConfig.cmake, GridCollConfigVersion.cmake,
#                        GridCollTargets.cmake (namespace GridColl::)
#   lib/systemd/system/gridrelay.service  (/lib/systemd/system when the
#             prefix is /usr, as Debian 12 keeps units; GRIDCOLL_SYSTEMD_UNITDIR
#             overrides)
#   share/doc/gridcoll-relay/examples/  gridrelay.conf (the service's example
#             configuration) and make-certs.sh
#
# Every install() names one of two components, which are the two Debian
# packages of cmake/GridCollPackaging.cmake (`cpack -G DEB`):
#
#   relay     gridcoll-relay: the site gateway daemon, its systemd unit and
#             example configuration
#   gridcoll  gridcoll: the launcher, the tools, the library and everything
#             to build programs against it (depends on gridcoll-relay:
#             gridrun starts the gridrelay next to it)
#
# A plain `cmake --install` installs both.
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
  COMPONENT gridcoll
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS gridcoll_client gridcoll_sched gridcoll_common
  EXPORT GridCollTargets
  COMPONENT gridcoll
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

get_target_property(_gc_lib_binary_dir gridcoll BINARY_DIR)
install(FILES ${_gc_lib_binary_dir}/include/gridcoll.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT gridcoll)

# gridrun starts the gridrelay, gridwan and (--probe) gridcoll-probe found
# next to its own executable.
install(TARGETS gridrun gridrelay-bench gridcoll-info gridwan gridcoll-probe
                gridcoll-sched
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT gridcoll)
install(TARGETS gridrelay
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT relay)
# `gridrun --native` looks for it in ../lib too.
if(TARGET gridrun-native)
  install(TARGETS gridrun-native LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT gridcoll)
endif()

# The relay as a system service: the unit, and the example configuration
# and certificate script under the package's doc directory (the package
# itself never writes /etc/gridcoll/gridrelay.conf, so the unit's
# ConditionPathExists keeps an unconfigured service from starting).
#
# The unit goes to /lib/systemd/system when the prefix is /usr (Debian 12:
# packages ship units there, not in /usr/lib, because of the merged-/usr
# aliasing rules of dpkg), and under the prefix otherwise, so
# `cmake --install --prefix DIR` never writes outside DIR.  The prefix is
# only known when the install runs (cpack installs into its staging
# directory with prefix /usr), hence install(CODE).
set(GRIDCOLL_SYSTEMD_UNITDIR "" CACHE PATH
    "Where gridrelay.service goes (empty: /lib/systemd/system for prefix /usr, else PREFIX/lib/systemd/system)")
set(_gc_unit ${PROJECT_SOURCE_DIR}/conf/systemd/gridrelay.service)
install(CODE "
  set(_gc_unitdir \"${GRIDCOLL_SYSTEMD_UNITDIR}\")
  if(_gc_unitdir STREQUAL \"\")
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      set(_gc_unitdir /lib/systemd/system)
    else()
      set(_gc_unitdir \"\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\")
    endif()
  elseif(NOT IS_ABSOLUTE \"\${_gc_unitdir}\")
    set(_gc_unitdir \"\${CMAKE_INSTALL_PREFIX}/\${_gc_unitdir}\")
  endif()
  file(INSTALL DESTINATION \"\${_gc_unitdir}\" TYPE FILE
       FILES \"${_gc_unit}\")"
  COMPONENT relay)
set(GRIDCOLL_INSTALL_RELAY_EXAMPLESDIR
    ${CMAKE_INSTALL_DATAROOTDIR}/doc/gridcoll-relay/examples)
install(FILES ${PROJECT_SOURCE_DIR}/conf/gridrelay.conf.example
  DESTINATION ${GRIDCOLL_INSTALL_RELAY_EXAMPLESDIR}
  RENAME gridrelay.conf
  COMPONENT relay)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/conf/tls/make-certs.sh
  DESTINATION ${GRIDCOLL_INSTALL_RELAY_EXAMPLESDIR}
  COMPONENT relay)

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
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT gridcoll)

# CMake package: find_package(GridColl) and GridColl::gridcoll.
install(EXPORT GridCollTargets
  NAMESPACE GridColl::
  FILE GridCollTargets.cmake
  DESTINATION ${GRIDCOLL_INSTALL_CMAKEDIR}
  COMPONENT gridcoll)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/GridCollConfig.cmake.in
  ${PROJECT_BINARY_DIR}/GridCollConfig.cmake
  INSTALL_DESTINATION ${GRIDCOLL_INSTALL_CMAKEDIR})
# 0.x: minor versions may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/GridCollConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/GridCollConfig.cmake
              ${PROJECT_BINARY_DIR}/GridCollConfigVersion.cmake
  DESTINATION ${GRIDCOLL_INSTALL_CMAKEDIR}
  COMPONENT gridcoll)
