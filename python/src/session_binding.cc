// trainprof._core.Session: the C++ Session behind trainprof.Session (python/trainprof/_session.py
// holds the Pythonic surface). Options are built through the same config schema as
// `trainprof profile`, so a bad key gets the same message.
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "python/src/bindings.h"
#include "record/options_schema.h"
#include "session/live.h"
#include "trainprof/session.h"

namespace py = pybind11;

namespace trainprof::python {
namespace {

// The options of a YAML file (profiler keys) and "key=value" overrides, applied in that order.
Options BuildOptions(const std::optional<std::string>& config,
                     const std::vector<std::string>& overrides) {
  Options o;
  ThrowIfError(ApplyOptionsConfig(o, config.value_or(""), overrides), /*config=*/true);
  return o;
}

class PySession {
 public:
  PySession(const std::optional<std::string>& config, const std::vector<std::string>& overrides) {
    Options o = BuildOptions(config, overrides);
    print_ = o.output.print;
    o.output.print = false;  // Python prints the summary through sys.stdout
    auto created = Session::Create(std::move(o));
    ThrowIfError(created.status(), false);
    session_ = std::move(*created);
  }

  Session& s() { return *session_; }

  void SetStage(const std::string& stage) {
    if (stage == "train" || stage == "training") {
      s().SetStage(Stage::kTrain);
    } else if (stage == "validation" || stage == "val" || stage == "validate") {
      s().SetStage(Stage::kValidation);
    } else {
      throw py::value_error("trainprof: stage must be 'train' or 'validation', got '" + stage +
                            "'");
    }
  }

  // Finish()es with the GIL released; raises on an unwritten output (the others are written).
  std::string Finish() {
    Status st;
    {
      py::gil_scoped_release release;
      st = s().Finish();
    }
    ThrowIfError(st, false);
    return s().summary();
  }

  bool print() const { return print_; }

 private:
  std::unique_ptr<Session> session_;
  bool print_ = true;  // output.print as configured
};

void AddConfig(PySession& p, const std::string& key, const py::object& value) {
  if (py::isinstance<py::bool_>(value)) {
    p.s().AddConfigValue(key, value.cast<bool>());
  } else if (py::isinstance<py::int_>(value)) {
    p.s().AddConfigValue(key, value.cast<int64_t>());
  } else if (py::isinstance<py::float_>(value)) {
    p.s().AddConfigValue(key, value.cast<double>());
  } else {
    p.s().AddConfigValue(key, py::str(value).cast<std::string>());
  }
}

}  // namespace

Session& CoreSession(py::handle session) { return py::cast<PySession&>(session).s(); }

py::dict OptionKeys(const Options& o, std::initializer_list<std::string_view> sections) {
  Options copy = o;  // the schema binds to fields it may write; this one only reads
  base::ConfigSchema schema;
  AddOptionsKeys(schema, copy);
  py::dict d;
  for (const auto& [key, value] : schema.CurrentValues()) {
    const std::string_view section = std::string_view(key).substr(0, key.find('.'));
    if (std::find(sections.begin(), sections.end(), section) == sections.end()) continue;
    std::visit([&](const auto& v) { d[py::str(key)] = py::cast(v); }, value);
  }
  return d;
}

void AddSessionBinding(py::module_& m) {
  py::class_<PySession>(m, "Session")
      .def(py::init<const std::optional<std::string>&, const std::vector<std::string>&>(),
           py::arg("config"), py::arg("overrides"))
      .def("step", [](PySession& p) { p.s().Step(); })
      .def("set_stage", &PySession::SetStage)
      .def("set_epoch", [](PySession& p, int64_t e) { p.s().SetEpoch(e); })
      .def("set_batch_size", [](PySession& p, int64_t b) { p.s().SetBatchSize(b); })
      .def("set_dataloader_workers", [](PySession& p, int64_t w) { p.s().SetDataLoaderWorkers(w); })
      .def("set_meta",
           [](PySession& p, const std::string& k, const std::string& v) { p.s().SetMeta(k, v); })
      .def("add_note", [](PySession& p, const std::string& n) { p.s().AddNote(n); })
      .def("add_config", &AddConfig)
      .def("finish", &PySession::Finish)
      .def_property_readonly("epoch", [](PySession& p) { return p.s().epoch(); })
      .def_property_readonly("global_step", [](PySession& p) { return p.s().global_step(); })
      .def_property_readonly("profiler_step", [](PySession& p) { return p.s().profiler_step(); })
      .def_property_readonly("run_dir", [](PySession& p) { return p.s().run_dir(); })
      .def_property_readonly("print", &PySession::print);
  m.def(
      "check_config",
      [](const std::optional<std::string>& config, const std::vector<std::string>& overrides) {
        return OptionKeys(BuildOptions(config, overrides), {"output", "live"});
      },
      py::arg("config"), py::arg("overrides"),
      "Validates a config file and overrides as Session() would; returns the output keys.");
  // The live view's ranks: Python's thread carries the digests over torch.distributed's store;
  // the live thread only reads and writes this mailbox, so it never waits for the GIL.
  using Mailbox = session::MailboxLiveChannel;
  py::class_<Mailbox, std::shared_ptr<Mailbox>>(m, "LiveMailbox")
      .def(py::init<int64_t, int64_t>(), py::arg("rank"), py::arg("world_size"))
      .def("latest", &Mailbox::Latest, "This rank's latest digest (\"\" before the first).")
      .def("set_gathered", &Mailbox::SetGathered, "Every rank's latest digest, for rank 0.");
  m.def(
      "set_live_channel",
      [](std::shared_ptr<Mailbox> box) { session::SetLiveChannel(std::move(box)); },
      py::arg("mailbox").none(true), "The live view's channel to the other ranks; None: none.");
}

}  // namespace trainprof::python
