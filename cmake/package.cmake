# The Debian package: `cpack --config build/release/CPackConfig.cmake` after a build gives
# gpudoctor_<version>_amd64.deb. Runtime dependencies by dpkg-shlibdeps; NVIDIA's NVML is a
# Recommends (Debian non-free's libnvidia-ml1, which provides libnvidia-ml.so.1; any driver
# install that ships the library works). postinst creates the system user (sysusers.d) and
# reloads systemd; the service is neither enabled nor started.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpudoctor)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "gpudoctor maintainers <gpudoctor@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "tells whether NVIDIA GPUs really work, and why not")
set(CPACK_PACKAGE_DESCRIPTION "gpudoctor samples NVIDIA's NVML (or reads nvidia-smi, DCGM and Prometheus logs, or simulates
 GPUs) and diagnoses why GPUs are underused: data starvation, launch overhead, communication
 wait, memory bound, power cap, thermal, clocks, idle, contention. It also exports metrics for
 Prometheus under dcgm-exporter's names (gpudoctor serve, a systemd service not enabled by
 default).")
# Installed with DESTDIR under the prefix /usr, so that install-time code (the unit's ExecStart)
# sees the final prefix, not the staging directory.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libnvidia-ml1 | libnvidia-ml.so.1")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_OUTPUT_FILE_PREFIX ${PROJECT_BINARY_DIR}/package)
include(CPack)
