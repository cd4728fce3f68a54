// gpudoctor check: a one-shot, read-only audit of the machine's GPU settings and health, each
// check pass / warn / fail / info with its fix (docs/check.md).
#include <thread>

#include <fmt/format.h>

#include "analysis/machine_check.hpp"
#include "cli/common.hpp"
#include "host/audit.hpp"
#include "host/machine_facts.hpp"
#include "report/check_report.hpp"
#include "sources/health.hpp"

namespace gpudoctor::cli {
namespace {

constexpr int kExitChecksFailed = 3;  // a check at --fail-on's level or worse

std::optional<AuditItem> find_item(const std::vector<AuditItem>& items, const std::string& code) {
  for (const auto& i : items)
    if (i.code == code) return i;
  return std::nullopt;
}

}  // namespace

Command add_check_command(CLI::App& root) {
  struct Opts {
    SourceFlags source;
    bool json = false;
    std::string interval = "250ms";
    std::string fail_on = "fail";
    std::string sys = "/sys";
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "check",
      "Audit the machine once: power limit, persistence mode, application and locked clocks, PCIe "
      "link under load, ECC errors, retired pages and remapped rows, MIG mode, clock event "
      "reasons, thermal margin, driver and CUDA versions, CPU governor and NUMA affinity; "
      "pass / warn / fail / info with the fix for each. Read-only: it changes nothing. Exit "
      "status 3 when a check fails (see --fail-on).");
  add_source_flags(*cmd, opts->source);
  cmd->add_flag("--json", opts->json, "Print JSON (docs/check.md)");
  cmd->add_option("--interval", opts->interval,
                  "Time between the two samples (>= 100ms, so mean power and GPM are real)")
      ->capture_default_str();
  cmd->add_option("--fail-on", opts->fail_on,
                  "Exit with status 3 when a check is at least this bad: fail, warn, or never")
      ->check(CLI::IsMember({"fail", "warn", "never"}))
      ->capture_default_str();
  // For tests: CPU and PCI facts from a stand-in tree instead of /sys.
  cmd->add_option("--sys-root", opts->sys, "Read CPU and PCI facts from this tree")
      ->group("")
      ->type_name("DIR");

  return {cmd, [opts]() -> int {
            auto interval =
                parse_duration_flag("--interval", opts->interval, std::chrono::milliseconds(100));
            if (!interval) return report(interval.error());
            auto src = open_source_from(opts->source);
            if (!src) return report(src.error());
            Source& s = *src.value();

            // Two samples as `status` takes them, then the once-only health reads.
            const Frame first = s.sample();
            std::this_thread::sleep_for(interval.value());
            const Frame second = s.sample();
            const std::vector<DeviceHealth> health = read_device_health(s);

            // Host facts and the environment audit's judgement of them (no job environment:
            // only the CPU governor and NUMA items apply to a machine check).
            CheckInput in;
            in.system = s.system();
            host::AuditInput audit;
            audit.cpus = host::affinity_cpus();
            audit.cores = std::max<int>(1, static_cast<int>(audit.cpus.size()));
            audit.sys = opts->sys;
            in.cpu_governors = host::cpu_governors(audit.cpus, opts->sys);
            in.governor_warning = find_item(host::audit_environment(audit), "cpu_governor");
            const int numa_nodes = host::numa_node_count(opts->sys);
            for (size_t i = 0; i < s.devices().size(); ++i) {
              GpuCheckInput g;
              g.info = s.devices()[i];
              g.first = first.devices[i];
              g.second = second.devices[i];
              g.interval_s = second.time_s - first.time_s;
              g.health = i < health.size() ? health[i] : DeviceHealth{};
              g.numa_nodes = numa_nodes;
              if (!g.info.pci_bus_id.empty()) {
                g.numa_node = host::pci_numa_node(g.info.pci_bus_id, opts->sys);
                host::AuditInput one = audit;
                one.gpu_pci_bus_ids = {g.info.pci_bus_id};
                g.numa_warning = find_item(host::audit_environment(one), "numa_affinity");
              }
              in.gpus.push_back(std::move(g));
            }

            CheckView view;
            view.system = s.system();
            view.source = s.description();
            view.result = check_machine(in);
            view.health = health;
            for (const auto& d : second.devices) view.samples.push_back(d);
            if (opts->json)
              fmt::print("{}\n", render_check_json(view).dump(
                                     2, ' ', false, nlohmann::json::error_handler_t::replace));
            else
              fmt::print("{}", render_check_text(view));

            const int fails = view.result.count("fail"), warns = view.result.count("warn");
            if (opts->fail_on == "fail" && fails > 0) return kExitChecksFailed;
            if (opts->fail_on == "warn" && fails + warns > 0) return kExitChecksFailed;
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
