# layers.cmake — fails when an #include crosses the architecture's layers the wrong way
# (docs/architecture.md, "Layers"). Run at configure time (CMakeLists.txt) and as the ctest
# `layers` (cmake -DSRC=<source dir> -P layers.cmake), so a new include that breaks the rules
# fails the build and the tests.
#
# Rules, as "from -> forbidden":
#   core/  -> sim/, cuda/          the engine runs on the HAL, never on a backend
#   sim/   -> core/, cuda/         a backend knows the HAL only
#   cuda/  -> core/, sim/          (shared host math lives in hal/, e.g. hal/rope.h)
#   hal/   -> core/, sim/, cuda/   except hal/backends.c, the registry that names the backends
#   core/engine/, core/model/, core/text/ -> core/harness/   the harness uses the engine, not
#                                  the other way round
cmake_policy(VERSION 3.25)
if(NOT DEFINED SRC)
  set(SRC ${CMAKE_SOURCE_DIR})
endif()

set(rig_layer_rules
    "core/:sim/|cuda/"
    "sim/:core/|cuda/"
    "cuda/:core/|sim/"
    "hal/:core/|sim/|cuda/"
    "core/engine/:core/harness/"
    "core/model/:core/harness/"
    "core/text/:core/harness/")
set(rig_layer_exempt "hal/backends.c")

set(rig_layer_violations "")
foreach(rule IN LISTS rig_layer_rules)
  string(REPLACE ":" ";" parts "${rule}")
  list(GET parts 0 from)
  list(GET parts 1 forbidden)
  file(GLOB_RECURSE sources RELATIVE ${SRC} ${SRC}/${from}*.c ${SRC}/${from}*.h
       ${SRC}/${from}*.cu ${SRC}/${from}*.cuh)
  foreach(source IN LISTS sources)
    if(source IN_LIST rig_layer_exempt)
      continue()
    endif()
    file(STRINGS ${SRC}/${source} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"(${forbidden})")
    foreach(line IN LISTS lines)
      string(STRIP "${line}" line)
      string(APPEND rig_layer_violations "\n  ${source}: ${line}")
    endforeach()
  endforeach()
endforeach()

if(NOT rig_layer_violations STREQUAL "")
  message(FATAL_ERROR "includes across layers (tools/cmake/layers.cmake):"
                      "${rig_layer_violations}")
endif()
