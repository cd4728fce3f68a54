# The rooms of src/ and what each may use: declared once, here. src/CMakeLists.txt builds a library
# per room linked to the rooms it uses and gives each room an include view (build/.../rooms/ROOM)
# that holds only itself and the rooms below it, so an include of a room above fails to compile;
# cmake/check_rooms.cmake (the `rooms` test) reads every #include in src/ against the same table
# and fails on an include no line here allows, and on a room that uses one declared after it
# (an arrow up or a circle). docs/architecture.md draws the house.
#
# One line per room, lowest first: "ROOM: ROOMS IT USES DIRECTLY" (those rooms' own uses come with
# them). A room may use only rooms on lines above its own.
set(GPUDOCTOR_ROOM_TABLE
  "core:"
  "text: core"
  "host: core"
  "store: core"
  "sources: core host"
  "formats: core text store"
  "net: core text"
  "run: sources store"
  "prometheus: formats net"
  "analysis: core host"
  "fleet: analysis prometheus"
  "tui: analysis"
  "report: analysis fleet formats host"
  "exporter: report net"
  "cli: run exporter tui"
)

# GPUDOCTOR_ROOMS: the rooms in order; GPUDOCTOR_ROOM_USES_<room>: its direct uses;
# GPUDOCTOR_ROOM_BELOW_<room>: every room it may include (its uses and theirs, transitively).
# GPUDOCTOR_ROOM_TABLE_ERRORS: what is wrong with the table itself (a use of a room not declared
# above the user).
set(GPUDOCTOR_ROOMS "")
set(GPUDOCTOR_ROOM_TABLE_ERRORS "")
foreach(line IN LISTS GPUDOCTOR_ROOM_TABLE)
  string(REPLACE ":" ";" parts "${line}")
  list(GET parts 0 room)
  string(STRIP "${room}" room)
  set(uses "")
  list(LENGTH parts n)
  if(n GREATER 1)
    list(GET parts 1 uses_text)
    string(STRIP "${uses_text}" uses_text)
    if(NOT uses_text STREQUAL "")
      string(REGEX REPLACE "[ \t]+" ";" uses "${uses_text}")
    endif()
  endif()
  set(below "")
  foreach(u IN LISTS uses)
    if(NOT u IN_LIST GPUDOCTOR_ROOMS)
      list(APPEND GPUDOCTOR_ROOM_TABLE_ERRORS
           "room ${room} uses ${u}, which is not declared above it (an arrow up or a circle)")
      continue()
    endif()
    list(APPEND below ${u} ${GPUDOCTOR_ROOM_BELOW_${u}})
  endforeach()
  list(REMOVE_DUPLICATES below)
  set(GPUDOCTOR_ROOM_USES_${room} ${uses})
  set(GPUDOCTOR_ROOM_BELOW_${room} ${below})
  list(APPEND GPUDOCTOR_ROOMS ${room})
endforeach()
