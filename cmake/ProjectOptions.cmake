# Warnings and sanitizers for the project's own targets only; third-party headers come
# in through imported targets, whose include directories CMake marks SYSTEM.
add_library(mbo_options INTERFACE)
target_compile_options(mbo_options INTERFACE -Wall -Wextra -Werror)
# GCC 12 reports -Wrestrict false positives inside libstdc++'s std::string concatenation at
# -O2 and above (GCC bug 105329, fixed in GCC 13); it says nothing about our code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(mbo_options INTERFACE -Wno-restrict)
endif()
target_compile_definitions(mbo_options INTERFACE
  MBO_VERSION="${PROJECT_VERSION}"
  # Eigen: no dynamic allocation hidden in expression temporaries goes unnoticed in debug
  EIGEN_MPL2_ONLY)

if(MBO_SANITIZE)
  set(_san -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_compile_options(mbo_options INTERFACE ${_san})
  target_link_options(mbo_options INTERFACE ${_san})
  target_compile_definitions(mbo_options INTERFACE MBO_SANITIZED=1)
endif()

# Every project target: C++20, warnings as errors, sanitizers when asked.
function(mbo_target name)
  target_link_libraries(${name} PRIVATE mbo_options)
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
endfunction()
