# What `cmake --install` gives other projects: a CMake package (find_package(Larder)) with the
# imported targets Larder::larder (liblarder.so: the C/C++ API and the MPI_Init hooks),
# Larder::preload (liblarder_preload.so, for LD_PRELOAD) and Larder::hdf5_vol (the VOL plugin,
# for HDF5_PLUGIN_PATH), and a pkg-config file, larder.pc.
include(CMakePackageConfigHelpers)

set(LARDER_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Larder)
set_target_properties(larder PROPERTIES EXPORT_NAME larder)
set(_larder_exported larder)
if(TARGET larder_preload)
  set_target_properties(larder_preload PROPERTIES EXPORT_NAME preload)
  list(APPEND _larder_exported larder_preload)
endif()
if(TARGET larder_vol)
  set_target_properties(larder_vol PROPERTIES EXPORT_NAME hdf5_vol)
  list(APPEND _larder_exported larder_vol)
endif()
install(EXPORT LarderTargets NAMESPACE Larder:: DESTINATION ${LARDER_CMAKE_INSTALL_DIR})

# Facts the package states for its users (LarderConfig.cmake.in, larder.pc.in).
set(LARDER_PACKAGE_MPICC ${LARDER_MPICC})
set(LARDER_PACKAGE_HAVE_HDF5 ${LARDER_HAVE_HDF5})
if(LARDER_HAVE_HDF5)
  set(LARDER_PACKAGE_HDF5_INCLUDE_DIR ${LARDER_HDF5_INCLUDE})
else()
  set(LARDER_PACKAGE_HDF5_INCLUDE_DIR "")
endif()
if(LARDER_MPI STREQUAL "openmpi")
  set(LARDER_PC_MPI ompi-c)
else()
  set(LARDER_PC_MPI mpich)
endif()
set(LARDER_PACKAGE_PYTHON_DIR ${LARDER_PYTHON_INSTALL_DIR})

configure_package_config_file(cmake/LarderConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/LarderConfig.cmake
  INSTALL_DESTINATION ${LARDER_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR LARDER_PACKAGE_PYTHON_DIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/LarderConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/LarderConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/LarderConfigVersion.cmake
        DESTINATION ${LARDER_CMAKE_INSTALL_DIR})

# Relocatable: the prefix is found from where the .pc file is (cmake --install --prefix P).
file(RELATIVE_PATH LARDER_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/larder.pc.in ${CMAKE_BINARY_DIR}/cmake/larder.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/larder.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# An environment-modules file (Lmod and Tcl modules): `module use <prefix>/share/modulefiles`,
# `module load larder`. The prefix is only known at install time (cmake --install --prefix P), so
# the file is configured twice: here with everything but the prefix, at install with it.
set(LARDER_MODULE_PREFIX "@LARDER_MODULE_PREFIX@")  # kept for the second pass
configure_file(cmake/larder.modulefile.in ${CMAKE_BINARY_DIR}/cmake/larder.modulefile.in @ONLY)
set(LARDER_MODULE_NAME larder/${PROJECT_VERSION}-${LARDER_MPI})
install(CODE "
  set(LARDER_MODULE_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(_module \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/modulefiles/${LARDER_MODULE_NAME}\")
  message(STATUS \"Installing: \${_module}\")
  configure_file(\"${CMAKE_BINARY_DIR}/cmake/larder.modulefile.in\" \"\${_module}\" @ONLY)
")
