# Warnings for Larder's own code (third-party headers are included as SYSTEM).
add_library(larder_warnings INTERFACE)
target_compile_options(larder_warnings INTERFACE -Wall -Wextra -Werror -Wno-missing-field-initializers)
