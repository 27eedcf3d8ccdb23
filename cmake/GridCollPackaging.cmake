# Debian packages of GridColl (included from the top-level CMakeLists.txt
# after GridCollInstall.cmake):
#
#   cmake --build BUILD && cd BUILD && cpack -G DEB
#
# makes, from the two install components of GridCollInstall.cmake,
#
#   gridcoll-relay_VERSION-1_ARCH.deb  /usr/bin/gridrelay, the systemd unit
#       /lib/systemd/system/gridrelay.service, the example configuration and
#       make-certs.sh in /usr/share/doc/gridcoll-relay/examples/; its
#       maintainer scripts (cmake/debian/gridcoll-relay/) create the system
#       user gridrelay and /etc/gridcoll and leave the service disabled
#       until /etc/gridcoll/gridrelay.conf exists;
#   gridcoll_VERSION-1_ARCH.deb        gridrun and the tools, libgridcoll
#       (shared and static), gridcoll.h, gridcoll.pc and the CMake package.
#
# gridcoll depends on gridcoll-relay of the same version: gridrun's local
# mode (`gridrun --sites N`) starts the gridrelay next to it, /usr/bin.
# Shared-library dependencies come from dpkg-shlibdeps (package dpkg-dev).
# docs/install.md describes the packages.

set(CPACK_PACKAGE_NAME gridcoll)
set(CPACK_PACKAGE_VENDOR "GridColl")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it in front of
# each package's own synopsis line below.
set(CPACK_PACKAGE_CONTACT "GridColl maintainers <gridcoll@example.org>")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://gridcoll.example.org/")
set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR TGZ)

# Installed as the packages will lay it out: prefix /usr, and the unit at
# its absolute /lib/systemd/system (SET_DESTDIR makes cpack install with
# prefix /usr into DESTDIR=its staging directory instead of prefix
# staging/usr; GridCollInstall.cmake chooses the unit directory by the
# prefix).
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

# One package per component.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL relay gridcoll)
set(CPACK_COMPONENT_RELAY_DISPLAY_NAME "gridrelay service")
set(CPACK_COMPONENT_GRIDCOLL_DISPLAY_NAME "GridColl launcher and library")

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${CPACK_PACKAGE_HOMEPAGE_URL}")
# Depends on the libraries the ELF files need, from dpkg-shlibdeps; the
# explicit Depends below are added to them.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

# ---- gridcoll-relay -------------------------------------------------------
set(CPACK_DEBIAN_RELAY_PACKAGE_NAME gridcoll-relay)
set(CPACK_DEBIAN_RELAY_PACKAGE_SECTION net)
# adduser: postinst creates the service user (deb-systemd-helper comes from
# init-system-helpers, which is essential).  procps: the unit's ExecReload
# runs /bin/kill, which a minimal Debian 12 lacks.  openssl runs
# make-certs.sh.
set(CPACK_DEBIAN_RELAY_PACKAGE_DEPENDS "adduser, procps")
set(CPACK_DEBIAN_RELAY_PACKAGE_RECOMMENDS "openssl")
set(CPACK_DEBIAN_RELAY_DESCRIPTION
    "GridColl site gateway relay (gridrelay)
gridrelay joins the MPI ranks of one site to the relays of the other sites
of a GridColl job over the wide-area network (TCP, TLS).  This package
holds the daemon, its systemd unit (disabled until
/etc/gridcoll/gridrelay.conf exists) and an example configuration.")
set(_gc_deb_scripts ${CMAKE_CURRENT_LIST_DIR}/debian/gridcoll-relay)
set(CPACK_DEBIAN_RELAY_PACKAGE_CONTROL_EXTRA
    ${_gc_deb_scripts}/postinst ${_gc_deb_scripts}/prerm
    ${_gc_deb_scripts}/postrm)
# The scripts keep their 0755 instead of taking the build's umask.
set(CPACK_DEBIAN_RELAY_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

# ---- gridcoll -------------------------------------------------------------
set(CPACK_DEBIAN_GRIDCOLL_PACKAGE_NAME gridcoll)
set(CPACK_DEBIAN_GRIDCOLL_PACKAGE_SECTION devel)
# Programs are built with mpicc against MPICH (gridcoll.pc: Requires:
# mpich, from libmpich-dev) and run under its hydra (mpich).  The static
# library also needs libssl-dev, zlib1g-dev and libconfig-dev.
set(CPACK_DEBIAN_GRIDCOLL_PACKAGE_DEPENDS
    "gridcoll-relay (= ${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}), mpich, libmpich-dev")
set(CPACK_DEBIAN_GRIDCOLL_PACKAGE_RECOMMENDS "pkg-config")
set(CPACK_DEBIAN_GRIDCOLL_PACKAGE_SUGGESTS
    "libssl-dev, zlib1g-dev, libconfig-dev, cmake")
set(CPACK_DEBIAN_GRIDCOLL_DESCRIPTION
    "Runs one MPI job across several sites (launcher and library)
GridColl runs an MPICH program across several clusters joined by a
wide-area network: libgridcoll interposes on MPI (PMPI) and sends what
crosses sites through one gridrelay per site.  This package holds the
launcher gridrun (whose local mode needs no configuration: gridrun --sites 2
-n 4 ./app), the tools, libgridcoll (shared and static), gridcoll.h, the
pkg-config file and the CMake package.")

include(CPack)
