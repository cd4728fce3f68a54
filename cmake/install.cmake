# `cmake --install` (GNUInstallDirs) and the Debian package (cmake/package.cmake):
#   bin/gpudoctor; lib/gpudoctor/gpudoctor-kubelet.so (the kubelet client module); share/man/man1: a page per command from the program's own --help (help2man,
#   at build time); bash completion; share/doc/gpudoctor: README and docs/; share/gpudoctor:
#   the deploy files (alert and recording rules, the fleet recording rules, both Grafana
#   dashboards, unit, manifests, container file; not the rules' tests); the systemd unit
#   (its ExecStart pointing at the installed binary) and a sysusers.d entry for its user.
include(GNUInstallDirs)

install(TARGETS gpudoctor RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The kubelet client module, where the program looks for it: ../lib/gpudoctor from bin/ (not
# the multiarch lib directory: a private module, found relative to the program).
if(NOT CMAKE_INSTALL_BINDIR STREQUAL "bin")
  message(FATAL_ERROR "CMAKE_INSTALL_BINDIR must be bin: the program finds its kubelet client "
                      "module in ../lib/gpudoctor (host/pod_resources.cpp)")
endif()
install(TARGETS gpudoctor_kubelet LIBRARY DESTINATION lib/gpudoctor)

option(GPUDOCTOR_MAN_PAGES "Generate man pages and bash completion with help2man" ON)
if(GPUDOCTOR_MAN_PAGES)
  find_program(HELP2MAN help2man)
  if(NOT HELP2MAN)
    message(FATAL_ERROR "help2man not found: run scripts/install-deps.sh, or configure with "
                        "-DGPUDOCTOR_MAN_PAGES=OFF")
  endif()
  set(gen_dir ${PROJECT_BINARY_DIR}/share)
  add_custom_command(OUTPUT ${gen_dir}/stamp
    COMMAND bash ${PROJECT_SOURCE_DIR}/cmake/gen_man_and_completion.sh $<TARGET_FILE:gpudoctor>
            ${gen_dir} ${PROJECT_VERSION}
    COMMAND ${CMAKE_COMMAND} -E touch ${gen_dir}/stamp
    DEPENDS gpudoctor ${PROJECT_SOURCE_DIR}/cmake/gen_man_and_completion.sh
    COMMENT "gpudoctor: man pages and bash completion from --help" VERBATIM)
  add_custom_target(gpudoctor_man ALL DEPENDS ${gen_dir}/stamp)
  install(DIRECTORY ${gen_dir}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES ${gen_dir}/completion/gpudoctor
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
endif()

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY deploy/ DESTINATION ${CMAKE_INSTALL_DATADIR}/gpudoctor
        PATTERN "*.test.yml" EXCLUDE PATTERN "debian" EXCLUDE)
install(FILES deploy/systemd/gpudoctor.sysusers DESTINATION lib/sysusers.d RENAME gpudoctor.conf)

# The unit, with the installed binary's path; the path is taken at install time, so the package
# (CPACK_SET_DESTDIR: prefix /usr) gets /usr/bin/gpudoctor. Installed, never enabled or started.
install(CODE "
  set(unit_source \"${PROJECT_SOURCE_DIR}/deploy/systemd/gpudoctor.service\")
  set(bindir \"${CMAKE_INSTALL_BINDIR}\")
  set(docdir \"${CMAKE_INSTALL_DOCDIR}\")")
install(CODE [[
  file(READ "${unit_source}" unit)
  string(REPLACE "/usr/local/bin/gpudoctor" "${CMAKE_INSTALL_PREFIX}/${bindir}/gpudoctor" unit "${unit}")
  string(REPLACE "/usr/local/share/doc/gpudoctor" "${CMAKE_INSTALL_PREFIX}/${docdir}" unit "${unit}")
  set(dest "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
  message(STATUS "Installing: ${dest}/gpudoctor.service")
  file(MAKE_DIRECTORY "${dest}")
  file(WRITE "${dest}/gpudoctor.service" "${unit}")
]])
