#include "mcp/server.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "mcp/arguments.h"
#include "mcp/run_cache.h"
#include "trainprof/version.h"

namespace trainprof::mcp {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxResourceBytes = size_t{8} << 20;
constexpr const char* kInstructions =
    "trainprof answers why a deep-learning training run is slow or runs out of memory. Start "
    "with `analyze` on a trace, a folder of rank traces, an Nsight Systems export, a memory "
    "snapshot or a run folder; then `findings` for the evidence behind each finding, `table` "
    "for rows of a table it lists, `explain` for what a rule or figure means, `diff` for two "
    "runs, `runs` for the run history. Values are in base units (seconds, bytes, percent).";

struct Job {
  Json id;
  Json params;
  const Tool* tool = nullptr;
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
};

std::string MimeOf(const fs::path& p) {
  const std::string ext = p.extension().string();
  if (ext == ".json") return "application/json";
  if (ext == ".csv") return "text/csv";
  if (ext == ".html") return "text/html";
  return "text/plain";
}

class Server {
 public:
  Server(const ServerOptions& o, std::ostream& out) : options_(o), out_(out) {
    if (o.roots.empty()) {
      roots_.Set({fs::current_path().string()}, "the working folder");
    } else {
      roots_.Set(o.roots, "the --root folders");
    }
  }

  int Run(std::istream& in) {
    std::thread worker([this] { WorkerLoop(); });
    std::string line;
    while (std::getline(in, line)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      OnLine(line);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      roots_pending_ = false;
    }
    cv_.notify_all();
    worker.join();
    return 0;
  }

 private:
  void Send(const Json& message) {
    const std::string text = Line(message);
    std::lock_guard<std::mutex> lock(out_mu_);
    out_ << text << '\n' << std::flush;
  }

  void OnLine(const std::string& line) {
    Json m = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (m.is_discarded()) {
      return Send(
          ErrorResponse(nullptr, {kParseError, "not a JSON message: " + line.substr(0, 60)}));
    }
    if (!m.is_object()) {
      return Send(ErrorResponse(nullptr, {kInvalidRequest, "a message is one JSON object"}));
    }
    const bool has_id = m.contains("id") && (m["id"].is_string() || m["id"].is_number());
    if (!m.contains("method") || !m["method"].is_string()) {
      if (has_id && (m.contains("result") || m.contains("error"))) return OnResponse(m);
      return Send(ErrorResponse(has_id ? m["id"] : Json(nullptr),
                                {kInvalidRequest, "a request needs a method"}));
    }
    const std::string method = m["method"].get<std::string>();
    const Json params = m.value("params", Json::object());
    if (!has_id) return OnNotification(method, params);
    if (!params.is_object())
      return Send(ErrorResponse(m["id"], {kInvalidParams, "params must be an object"}));
    OnRequest(m["id"], method, params);
  }

  void OnRequest(const Json& id, const std::string& method, const Json& params) {
    if (method == "initialize") return Send(Response(id, Initialize(params)));
    if (method == "ping") return Send(Response(id, Json::object()));
    if (method == "tools/list") {
      Json tools = Json::array();
      for (const Tool& t : Tools()) tools.push_back(ToolListing(t));
      return Send(Response(id, {{"tools", std::move(tools)}}));
    }
    if (method == "tools/call") return QueueCall(id, params);
    if (method == "resources/list")
      return Send(Response(id, RunFolderResources(roots_.dirs(), 200)));
    if (method == "resources/templates/list")
      return Send(Response(id, {{"resourceTemplates", Json::array()}}));
    if (method == "resources/read") return ReadResource(id, params);
    if (method == "logging/setLevel") return Send(Response(id, Json::object()));
    Send(ErrorResponse(id, {kMethodNotFound, fmt::format("unknown method '{}'", method)}));
  }

  Json Initialize(const Json& params) {
    std::string version = kProtocolVersions.front();
    if (auto v = params.find("protocolVersion"); v != params.end() && v->is_string()) {
      for (const std::string& known : kProtocolVersions)
        if (known == v->get<std::string>()) version = known;
    }
    const Json caps = params.value("capabilities", Json::object());
    client_roots_ = caps.is_object() && caps.contains("roots");
    return {{"protocolVersion", version},
            {"capabilities",
             {{"tools", {{"listChanged", false}}}, {"resources", {{"listChanged", false}}}}},
            {"serverInfo",
             {{"name", "trainprof"}, {"title", "trainprof"}, {"version", TRAINPROF_VERSION}}},
            {"instructions", kInstructions}};
  }

  void OnNotification(const std::string& method, const Json& params) {
    if (method == "notifications/initialized" || method == "notifications/roots/list_changed") {
      if (client_roots_) AskRoots();
    } else if (method == "notifications/cancelled" && params.is_object()) {
      Cancel(params.value("requestId", Json()));
    }
  }

  void AskRoots() {
    std::lock_guard<std::mutex> lock(mu_);
    roots_pending_ = true;
    roots_request_ = fmt::format("trainprof-roots-{}", ++roots_asked_);
    Send(Request(roots_request_, "roots/list", Json::object()));
  }

  void OnResponse(const Json& m) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (m["id"] != Json(roots_request_)) return;
      roots_pending_ = false;
    }
    if (m.contains("result") && m["result"].is_object()) {
      std::vector<std::string> dirs = DirsOfRoots(m["result"]);
      if (!dirs.empty()) roots_.Set(dirs, "the client's roots");
    }
    cv_.notify_all();
  }

  void QueueCall(const Json& id, const Json& params) {
    const std::string name = params.value("name", "");
    const Tool* tool = FindTool(name);
    if (tool == nullptr) {
      std::string names;
      for (const Tool& t : Tools()) names += (names.empty() ? "" : ", ") + t.name;
      return Send(ErrorResponse(
          id, {kInvalidParams, fmt::format("unknown tool '{}'; tools: {}", name, names)}));
    }
    Job job{id, params.value("arguments", Json::object()), tool};
    if (Status s = CheckArguments(tool->input_schema, job.params); !s.ok())
      return Send(ErrorResponse(id, {kInvalidParams, fmt::format("{}: {}", name, s.message())}));
    job.params["_meta"] = params.value("_meta", Json::object());
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(job));
    }
    cv_.notify_all();
  }

  void Cancel(const Json& id) {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(queue_, [&](const Job& j) { return j.id == id; });
    if (running_ && running_id_ == id) running_cancel_->store(true);
  }

  void WorkerLoop() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        if (!cv_.wait_for(lock, std::chrono::milliseconds(options_.roots_wait_ms),
                          [&] { return !roots_pending_; })) {
          roots_pending_ = false;  // the client never answered: its roots stay unknown
          std::fputs(
              "trainprof mcp: the client did not answer roots/list; reading under the "
              "--root folders or the working folder\n",
              stderr);
        }
        job = std::move(queue_.front());
        queue_.pop_front();
        running_ = true;
        running_id_ = job.id;
        running_cancel_ = job.cancelled;
      }
      Json reply = Call(job);
      {
        std::lock_guard<std::mutex> lock(mu_);
        running_ = false;
      }
      if (!job.cancelled->load()) Send(reply);
    }
  }

  Json Call(Job& job) {
    ToolContext ctx;
    ctx.roots = &roots_;
    ctx.cache = &cache_;
    ctx.limits = options_.limits;
    ctx.db = options_.db;
    auto flag = job.cancelled;
    ctx.cancelled = [flag] { return flag->load(); };
    const Json token = job.params["_meta"].value("progressToken", Json());
    job.params.erase("_meta");
    if (!token.is_null()) ctx.progress = Progress(token);
    try {
      StatusOr<Json> out = job.tool->call(job.params, ctx);
      if (out.ok()) return Response(job.id, ToolResult(std::move(*out)));
      if (IsBadCall(out.status()))
        return ErrorResponse(job.id, {kInvalidParams, out.status().message()});
      return Response(job.id, ToolError(out.status().message()));
    } catch (const std::exception& e) {
      return Response(job.id, ToolError(fmt::format("internal error: {}", e.what())));
    }
  }

  // notifications/progress for `token`, at most five a second.
  std::function<void(int64_t, int64_t)> Progress(const Json& token) {
    auto last = std::make_shared<std::chrono::steady_clock::time_point>();
    return [this, token, last](int64_t done, int64_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (done < total && now - *last < std::chrono::milliseconds(200)) return;
      *last = now;
      Send(Notification("notifications/progress", {{"progressToken", token},
                                                   {"progress", done},
                                                   {"total", total},
                                                   {"message", "reading the traces"}}));
    };
  }

  void ReadResource(const Json& id, const Json& params) {
    const std::string uri = params.value("uri", "");
    const std::string path = PathOfFileUri(uri);
    if (path.empty())
      return Send(ErrorResponse(id, {kInvalidParams, fmt::format("{}: not a file:// URI", uri)}));
    StatusOr<std::string> resolved = roots_.Resolve(path);
    if (!resolved.ok()) {
      const int code = IsBadCall(resolved.status()) ? kInvalidParams : kResourceNotFound;
      return Send(ErrorResponse(id, {code, resolved.status().message()}));
    }
    std::error_code ec;
    const auto size = fs::file_size(*resolved, ec);
    if (ec || size > kMaxResourceBytes) {
      return Send(ErrorResponse(
          id, {kInvalidParams,
               ec ? fmt::format("{}: not a readable file", path)
                  : fmt::format("{}: {} bytes, over the {} MiB a resource may hold; ask the "
                                "table tool for its rows instead",
                                path, size, kMaxResourceBytes >> 20)}));
    }
    std::ifstream f(*resolved, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    const std::string body = text.str();
    if (body.find('\0') != std::string::npos)
      return Send(ErrorResponse(id, {kInvalidParams, fmt::format("{}: not a text file", path)}));
    Json content = {{"uri", uri}, {"mimeType", MimeOf(*resolved)}, {"text", body}};
    Send(Response(id, {{"contents", Json::array({std::move(content)})}}));
  }

  const ServerOptions& options_;
  std::ostream& out_;
  std::mutex out_mu_;
  Roots roots_;
  RunCache cache_;
  bool client_roots_ = false;

  std::mutex mu_;  // guards what follows
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  bool running_ = false;
  Json running_id_;
  std::shared_ptr<std::atomic<bool>> running_cancel_;
  bool roots_pending_ = false;
  std::string roots_request_;
  int roots_asked_ = 0;
};

}  // namespace

int Serve(const ServerOptions& options, std::istream& in, std::ostream& out) {
  Server server(options, out);
  return server.Run(in);
}

}  // namespace trainprof::mcp
