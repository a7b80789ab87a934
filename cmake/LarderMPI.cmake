# Picks the MPI from one setting, never from Debian's mpicc/mpiexec alternatives (they flip to
# Open MPI as soon as it is installed). LARDER_MPI=mpich (default) or openmpi.
set(LARDER_MPI "mpich" CACHE STRING "MPI implementation to build against: mpich or openmpi")
set_property(CACHE LARDER_MPI PROPERTY STRINGS mpich openmpi)
if(NOT LARDER_MPI MATCHES "^(mpich|openmpi)$")
  message(FATAL_ERROR "LARDER_MPI='${LARDER_MPI}' is not valid: accepted values are mpich and openmpi")
endif()

find_program(LARDER_MPICC mpicc.${LARDER_MPI} REQUIRED)
find_program(LARDER_MPICXX mpicxx.${LARDER_MPI} REQUIRED)
find_program(LARDER_MPIEXEC mpiexec.${LARDER_MPI} REQUIRED)
set(MPI_C_COMPILER ${LARDER_MPICC} CACHE FILEPATH "" FORCE)
set(MPI_CXX_COMPILER ${LARDER_MPICXX} CACHE FILEPATH "" FORCE)
set(MPIEXEC_EXECUTABLE ${LARDER_MPIEXEC} CACHE FILEPATH "" FORCE)
find_package(MPI 3.0 REQUIRED COMPONENTS C CXX)

# How tests launch MPI jobs: Open MPI refuses root and oversubscription unless told.
set(LARDER_MPIEXEC_PREFLAGS "")
set(LARDER_MPI_TEST_ENV "")
if(LARDER_MPI STREQUAL "openmpi")
  set(LARDER_MPIEXEC_PREFLAGS --oversubscribe --bind-to none)
  set(LARDER_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
                          OMPI_MCA_osc=ucx)
else()
  set(LARDER_MPIEXEC_PREFLAGS -bind-to none)
endif()
message(STATUS "Larder MPI: ${LARDER_MPI} (${LARDER_MPIEXEC})")

# Larder uses MPI's C API only: keep the deprecated C++ bindings (libmpi_cxx) out of every
# translation unit, so nothing depends on them.
add_compile_definitions(OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
