// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// py_policy.cpp: the adapters behind tierpool.EvictionPolicy and tierpool.Predictor, the
// registry a Pool or a replay gets, and their bindings (py_policy.hpp; Notes there).

#include "py_policy.hpp"

#include <Python.h>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <tierpool/error.hpp>

namespace tierpool::python {

using namespace nb::literals;

namespace {

// The Python side of the package (tierpool/_policy.py): base classes and registrations.
nb::object policy_module() { return nb::module_::import_("tierpool._policy"); }

std::string py_type_name(nb::handle o) { return nb::cast<std::string>(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(o.ptr()))).attr("__name__")); }

std::string short_repr(nb::handle o)
{
  PyObject* r = PyObject_Repr(o.ptr());
  if (r == nullptr) {
    PyErr_Clear();
    return "<unprintable " + py_type_name(o) + ">";
  }
  std::string s = nb::cast<std::string>(nb::steal(r));
  if (s.size() > 80) { s = s.substr(0, 77) + "..."; }
  return s;
}

// Take the raised Python exception (the error indicator must be set): the exception
// object, with its traceback attached, and "Type: message".
nb::object take_exception(std::string& text)
{
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value != nullptr && tb != nullptr) { PyException_SetTraceback(value, tb); }
  Py_XDECREF(type);
  Py_XDECREF(tb);
  if (value == nullptr) {
    text = "an unknown error";
    return nb::none();
  }
  nb::object exc = nb::steal(value);
  PyObject* s = PyObject_Str(exc.ptr());
  std::string msg;
  if (s != nullptr) {
    msg = nb::cast<std::string>(nb::steal(s));
  } else {
    PyErr_Clear();
  }
  text = py_type_name(exc) + (msg.empty() ? std::string() : ": " + msg);
  return exc;
}

bool interpreter_alive() noexcept { return Py_IsInitialized() != 0; }

// The method `hook` of `obj`, or an empty object when its class does not override the
// base class's (a no-op there): such hooks are not called at all.
nb::object overridden(nb::handle obj, nb::handle base, char const* hook)
{
  if (!nb::hasattr(obj, hook)) { return {}; }
  nb::object const cls_attr = nb::getattr(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()))), hook, nb::none());
  if (base.is_valid() && !cls_attr.is_none() && nb::hasattr(base, hook) && cls_attr.is(base.attr(hook))) { return {}; }
  return nb::getattr(obj, hook);
}

std::string python_name(nb::handle factory)
{
  std::string raw;
  if (nb::hasattr(factory, "name")) {
    nb::object n = factory.attr("name");
    if (nb::isinstance<nb::str>(n)) { raw = nb::cast<std::string>(n); }
  }
  if (raw.empty() && nb::hasattr(factory, "__name__")) { raw = nb::cast<std::string>(factory.attr("__name__")); }
  std::string out;
  for (char c : raw) {
    auto const u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') { out.pop_back(); }
  return out.empty() ? std::string("python") : out;
}

std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) noexcept
{
  return b > std::numeric_limits<std::uint64_t>::max() - a ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

}  // namespace

// ---- py_holder (Note [Python objects at exit]) ----

namespace {
struct holder_list {
  std::mutex mtx;
  std::set<py_holder*> live;
};
holder_list& holders()
{
  static auto* list = new holder_list;  // never destroyed: holders may outlive static destruction
  return *list;
}
}  // namespace

py_holder::py_holder()
{
  holder_list& h = holders();
  std::lock_guard lock(h.mtx);
  h.live.insert(this);
}

py_holder::~py_holder() { forget(); }

void py_holder::forget() noexcept
{
  if (!listed_) { return; }
  holder_list& h = holders();
  std::lock_guard lock(h.mtx);
  h.live.erase(this);
  listed_ = false;
}

void detach_all_python_objects() noexcept
{
  holder_list& h = holders();
  for (;;) {
    py_holder* next = nullptr;
    {
      std::lock_guard lock(h.mtx);
      for (py_holder* p : h.live) {
        if (!p->detached_) {
          next = p;
          break;
        }
      }
      if (next == nullptr) { return; }
      next->detached_ = true;
    }
    next->detach();  // may run Python finalizers, which may destroy (and unlist) other holders
  }
}

// ---- policy_failures ----

policy_failures::~policy_failures()
{
  if (!interpreter_alive()) {
    forget();
    for (auto& f : waiting_) { (void)f.cause.release(); }
    return;
  }
  nb::gil_scoped_acquire gil;
  forget();
  waiting_.clear();
}

void policy_failures::detach() noexcept
{
  std::vector<policy_failure> dropped;
  {
    std::lock_guard lock(mtx_);
    dropped.swap(waiting_);
    pending_.store(false, std::memory_order_relaxed);
  }
}

void policy_failures::record(std::uint32_t tier, bool predictor, std::string message, nb::object cause) noexcept
{
  try {
    std::lock_guard lock(mtx_);
    if (predictor) {
      ++predictor_failures_;
    } else {
      ++fallbacks_[tier];
    }
    waiting_.push_back({std::move(message), std::move(cause)});
    pending_.store(true, std::memory_order_relaxed);
  } catch (...) {  // out of host memory: the count is what is lost
    pending_.store(true, std::memory_order_relaxed);
  }
}

void policy_failures::raise_pending()
{
  std::vector<policy_failure> taken;
  {
    std::lock_guard lock(mtx_);
    taken.swap(waiting_);
    pending_.store(false, std::memory_order_relaxed);
  }
  if (taken.empty()) { return; }
  policy_failure& first = taken.front();
  std::string msg = first.message;
  if (taken.size() > 1) { msg += " (and " + std::to_string(taken.size() - 1) + " more failure(s) since the last call)"; }
  nb::object cls = nb::module_::import_("tierpool._errors").attr("PolicyError");
  nb::object inst = cls(nb::str(msg.c_str()));
  if (first.cause.is_valid() && !first.cause.is_none()) { PyException_SetCause(inst.ptr(), first.cause.release().ptr()); }
  PyErr_SetObject(cls.ptr(), inst.ptr());
  throw nb::python_error();
}

std::map<std::uint32_t, std::uint64_t> policy_failures::fallbacks() const
{
  std::lock_guard lock(mtx_);
  return fallbacks_;
}

std::uint64_t policy_failures::predictor_failures() const
{
  std::lock_guard lock(mtx_);
  return predictor_failures_;
}

py_ref::~py_ref()
{
  if (!interpreter_alive()) {
    forget();
    (void)obj.release();
    return;
  }
  nb::gil_scoped_acquire gil;
  forget();
  obj.reset();
}

void py_ref::detach() noexcept { obj.reset(); }

// ---- py_policy ----

struct py_policy::python_side : py_holder {
  nb::object obj;
  nb::object on_insert, on_access, on_erase, on_pin, on_unpin, propose;
  nb::object view;                // one TensorView, refilled for every hook (no allocation)
  tensor_view* view_ptr{nullptr};
  nb::object request;             // one EvictionRequest, refilled for every propose
  eviction_request* req_ptr{nullptr};

  explicit python_side(nb::object o) : obj(std::move(o))
  {
    nb::object base = policy_module().attr("EvictionPolicy");
    on_insert = overridden(obj, base, "on_insert");
    on_access = overridden(obj, base, "on_access");
    on_erase = overridden(obj, base, "on_erase");
    on_pin = overridden(obj, base, "on_pin");
    on_unpin = overridden(obj, base, "on_unpin");
    if (!nb::hasattr(obj, "propose")) {
      throw logic_error("a Python eviction policy needs a propose(request) method (got " + short_repr(obj) + ")");
    }
    propose = obj.attr("propose");
    view = nb::cast(tensor_view{}, nb::rv_policy::move);
    view_ptr = nb::inst_ptr<tensor_view>(view);
    request = nb::cast(eviction_request{}, nb::rv_policy::move);
    req_ptr = nb::inst_ptr<eviction_request>(request);
  }
  python_side(python_side const&) = delete;
  python_side& operator=(python_side const&) = delete;
  ~python_side() override
  {
    nb::object* all[] = {&obj, &on_insert, &on_access, &on_erase, &on_pin, &on_unpin, &propose, &view, &request};
    if (!interpreter_alive()) {
      forget();
      for (nb::object* o : all) { (void)o->release(); }
      return;
    }
    nb::gil_scoped_acquire gil;
    forget();
    for (nb::object* o : all) { o->reset(); }
  }
  void detach() noexcept override  // the hooks go first: they are what the adapter checks
  {
    nb::object* all[] = {&on_insert, &on_access, &on_erase, &on_pin, &on_unpin, &propose, &request, &view, &obj};
    for (nb::object* o : all) { o->reset(); }
  }
};

py_policy::py_policy(std::shared_ptr<py_ref> factory, std::string name, std::shared_ptr<policy_failures> log)
  : name_(std::move(name)), log_(std::move(log))
{
  nb::gil_scoped_acquire gil;
  if (!factory->obj.is_valid()) { throw logic_error("Python policy '" + name_ + "': the interpreter is exiting"); }
  try {
    nb::object obj = factory->obj();
    py_ = std::make_unique<python_side>(std::move(obj));
  } catch (nb::python_error& e) {
    throw logic_error("Python policy '" + name_ + "': making it raised " + std::string(e.what()));
  }
}

py_policy::py_policy(py_policy const& other)
  : name_(other.name_),
    log_(other.log_),
    shadow_(other.shadow_),
    known_(other.known_),
    evictable_bytes_(other.evictable_bytes_),
    evictable_count_(other.evictable_count_),
    tier_(other.tier_),
    failed_(other.failed_)
{
  if (!other.py_) { return; }
  nb::gil_scoped_acquire gil;
  try {
    nb::object copy = nb::module_::import_("copy").attr("deepcopy")(other.py_->obj);
    py_ = std::make_unique<python_side>(std::move(copy));
  } catch (nb::python_error& e) {
    throw logic_error("Python policy '" + name_ + "': copying it (copy.deepcopy) raised " + std::string(e.what()));
  }
}

py_policy::~py_policy() = default;  // python_side and policy_failures take the GIL themselves

nb::handle py_policy::object() const noexcept { return py_ ? nb::handle(py_->obj) : nb::handle(); }

void py_policy::set_pinned(entry& e, bool pinned) noexcept
{
  if (e.pinned == pinned) { return; }
  e.pinned = pinned;
  if (pinned) {
    evictable_bytes_ -= e.bytes;
    --evictable_count_;
  } else {
    evictable_bytes_ += e.bytes;
    ++evictable_count_;
  }
}

void py_policy::track(tensor_view const& v, bool insert) noexcept
{
  auto const raw = static_cast<std::uint64_t>(v.id);
  auto it = known_.find(raw);
  if (it == known_.end()) {
    if (!insert) { return; }
    it = known_.emplace(raw, entry{v.bytes, true, 0}).first;
    set_pinned(it->second, v.pinned);
    return;
  }
  entry& e = it->second;
  if (!e.pinned) { evictable_bytes_ = evictable_bytes_ - e.bytes + v.bytes; }
  e.bytes = v.bytes;
  set_pinned(e, v.pinned);
}

void py_policy::fail(char const* hook, std::string what, bool from_python) const noexcept
{
  // GIL held.
  try {
    nb::object cause = nb::none();
    if (from_python) {
      std::string text;
      cause = take_exception(text);
      what = "raised " + text;
    }
    std::string msg = "Python policy '" + name_ + "' (tier " + std::to_string(tier_) + ") " + what + " in " + hook +
                      "; the tier falls back to lru";
    failed_ = true;
    if (log_) { log_->record(tier_, false, std::move(msg), std::move(cause)); }
  } catch (...) {
    PyErr_Clear();
    failed_ = true;
  }
}

void py_policy::call_view(nb::object python_side::*method, tensor_view const& v, char const* hook) noexcept
{
  nb::gil_scoped_acquire gil;
  nb::handle const m = (*py_).*method;
  if (!m.is_valid()) { return; }  // detached at exit
  *py_->view_ptr = v;
  PyObject* args[1] = {py_->view.ptr()};
  PyObject* r = PyObject_Vectorcall(m.ptr(), args, 1, nullptr);
  if (r == nullptr) {
    fail(hook, {}, true);
    return;
  }
  Py_DECREF(r);
}

void py_policy::call_id(nb::object python_side::*method, tensor_id id, char const* hook) noexcept
{
  nb::gil_scoped_acquire gil;
  nb::handle const m = (*py_).*method;
  if (!m.is_valid()) { return; }  // detached at exit
  PyObject* arg = PyLong_FromUnsignedLongLong(static_cast<std::uint64_t>(id));
  if (arg == nullptr) {
    fail(hook, {}, true);
    return;
  }
  PyObject* args[1] = {arg};
  PyObject* r = PyObject_Vectorcall(m.ptr(), args, 1, nullptr);
  Py_DECREF(arg);
  if (r == nullptr) {
    fail(hook, {}, true);
    return;
  }
  Py_DECREF(r);
}

void py_policy::on_insert(tensor_view const& v) noexcept
{
  tier_ = static_cast<std::uint32_t>(v.tier);
  track(v, true);
  shadow_.on_insert(v);
  if (!failed_ && py_ && py_->on_insert.is_valid()) { call_view(&python_side::on_insert, v, "on_insert"); }
}

void py_policy::on_access(tensor_view const& v) noexcept
{
  if (!known_.contains(static_cast<std::uint64_t>(v.id))) { return; }  // unknown: a no-op, not forwarded
  track(v, false);
  shadow_.on_access(v);
  if (!failed_ && py_ && py_->on_access.is_valid()) { call_view(&python_side::on_access, v, "on_access"); }
}

void py_policy::on_erase(tensor_id id) noexcept
{
  auto const it = known_.find(static_cast<std::uint64_t>(id));
  if (it == known_.end()) { return; }
  set_pinned(it->second, true);  // out of the evictable figures
  known_.erase(it);
  shadow_.on_erase(id);
  if (!failed_ && py_ && py_->on_erase.is_valid()) { call_id(&python_side::on_erase, id, "on_erase"); }
}

void py_policy::on_pin(tensor_id id) noexcept
{
  auto const it = known_.find(static_cast<std::uint64_t>(id));
  if (it == known_.end() || it->second.pinned) { return; }  // only transitions are forwarded
  set_pinned(it->second, true);
  shadow_.on_pin(id);
  if (!failed_ && py_ && py_->on_pin.is_valid()) { call_id(&python_side::on_pin, id, "on_pin"); }
}

void py_policy::on_unpin(tensor_id id) noexcept
{
  auto const it = known_.find(static_cast<std::uint64_t>(id));
  if (it == known_.end() || !it->second.pinned) { return; }
  set_pinned(it->second, false);
  shadow_.on_unpin(id);
  if (!failed_ && py_ && py_->on_unpin.is_valid()) { call_id(&python_side::on_unpin, id, "on_unpin"); }
}

bool py_policy::python_propose(eviction_request const& req, eviction_proposal& out) const
{
  // GIL held. False: the Python policy failed (recorded) or was detached at exit; `out` is
  // then cleared by the caller and the shadow answers.
  if (!py_->propose.is_valid()) { return false; }
  *py_->req_ptr = req;
  PyObject* args[1] = {py_->request.ptr()};
  PyObject* raw = PyObject_Vectorcall(py_->propose.ptr(), args, 1, nullptr);
  if (raw == nullptr) {
    fail("propose", {}, true);
    return false;
  }
  nb::object const r = nb::steal(raw);
  if (!PyList_Check(r.ptr()) && !PyTuple_Check(r.ptr())) {
    fail("propose", "returned " + short_repr(r) + " (a " + py_type_name(r) + "), not a list of tensor ids", false);
    return false;
  }
  Py_ssize_t const n = PySequence_Fast_GET_SIZE(r.ptr());
  PyObject** items = PySequence_Fast_ITEMS(r.ptr());
  ++mark_;
  if (mark_ == 0) {  // wrapped: forget the old marks
    for (auto& [id, e] : known_) { e.mark = 0; }
    mark_ = 1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = items[i];
    if (!PyLong_Check(item) || PyBool_Check(item)) {
      fail("propose",
           "returned victim #" + std::to_string(i) + " = " + short_repr(item) + " (a " + py_type_name(item) +
               "), not a tensor id (an int)",
           false);
      return false;
    }
    unsigned long long const v = PyLong_AsUnsignedLongLong(item);
    if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      fail("propose", "returned victim #" + std::to_string(i) + " = " + short_repr(item) + ", not a tensor id", false);
      return false;
    }
    auto const it = known_.find(v);
    if (it == known_.end()) {
      fail("propose", "proposed tensor " + std::to_string(v) + ", which is not resident in the tier", false);
      return false;
    }
    if (it->second.pinned) {
      fail("propose", "proposed pinned tensor " + std::to_string(v), false);
      return false;
    }
    if (it->second.mark == mark_) {
      fail("propose", "proposed tensor " + std::to_string(v) + " twice", false);
      return false;
    }
    it->second.mark = mark_;
    out.add(tensor_id{v}, it->second.bytes);
  }
  // Sized answers (the contract of tierpool::eviction_policy).
  std::uint64_t const evictable = evictable_bytes_ > std::numeric_limits<std::uint64_t>::max()
                                      ? std::numeric_limits<std::uint64_t>::max()
                                      : static_cast<std::uint64_t>(evictable_bytes_);
  if (req.bytes_needed == 0) {
    if (!out.empty()) {
      fail("propose", "proposed " + std::to_string(out.victims.size()) + " victim(s) for a request of 0 bytes", false);
      return false;
    }
    return true;
  }
  if (evictable >= req.bytes_needed) {
    if (out.bytes < req.bytes_needed) {
      fail("propose",
           "proposed " + std::to_string(out.bytes) + " bytes for a request of " + std::to_string(req.bytes_needed) +
               " bytes while " + std::to_string(evictable) + " are evictable",
           false);
      return false;
    }
  } else if (out.victims.size() != evictable_count_) {
    fail("propose",
         "proposed " + std::to_string(out.victims.size()) + " of the " + std::to_string(evictable_count_) +
             " evictable tensors for a request of " + std::to_string(req.bytes_needed) +
             " bytes that they cannot cover (" + std::to_string(evictable) + " bytes): propose them all",
         false);
    return false;
  }
  return true;
}

void py_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  if (!failed_ && py_) {
    bool ok = false;
    {
      nb::gil_scoped_acquire gil;
      try {
        ok = python_propose(req, out);
      } catch (nb::python_error& e) {  // a conversion inside raised: the policy's answer is bad
        e.restore();
        fail("propose", {}, true);
      }
    }
    if (ok) { return; }
    out.clear();
  }
  shadow_.propose(req, out);
}

// ---- py_predictor ----

struct py_predictor::python_side : py_holder {
  nb::object obj;
  nb::object on_access, on_free;
  nb::object view;
  access_view* view_ptr{nullptr};

  explicit python_side(nb::object o) : obj(std::move(o))
  {
    nb::object base = policy_module().attr("Predictor");
    if (!nb::hasattr(obj, "on_access")) {
      throw logic_error("a Python predictor needs an on_access(access) method (got " + short_repr(obj) + ")");
    }
    on_access = obj.attr("on_access");
    on_free = overridden(obj, base, "on_free");
    view = nb::cast(access_view{}, nb::rv_policy::move);
    view_ptr = nb::inst_ptr<access_view>(view);
  }
  python_side(python_side const&) = delete;
  python_side& operator=(python_side const&) = delete;
  ~python_side() override
  {
    nb::object* all[] = {&obj, &on_access, &on_free, &view};
    if (!interpreter_alive()) {
      forget();
      for (nb::object* o : all) { (void)o->release(); }
      return;
    }
    nb::gil_scoped_acquire gil;
    forget();
    for (nb::object* o : all) { o->reset(); }
  }
  void detach() noexcept override
  {
    nb::object* all[] = {&on_access, &on_free, &view, &obj};
    for (nb::object* o : all) { o->reset(); }
  }
};

py_predictor::py_predictor(std::shared_ptr<py_ref> factory, std::string name, std::shared_ptr<policy_failures> log)
  : name_(std::move(name)), log_(std::move(log))
{
  nb::gil_scoped_acquire gil;
  if (!factory->obj.is_valid()) { throw logic_error("Python predictor '" + name_ + "': the interpreter is exiting"); }
  try {
    py_ = std::make_unique<python_side>(factory->obj());
  } catch (nb::python_error& e) {
    throw logic_error("Python predictor '" + name_ + "': making it raised " + std::string(e.what()));
  }
}

py_predictor::py_predictor(py_predictor const& other)
  : name_(other.name_), log_(other.log_), bytes_(other.bytes_), failed_(other.failed_)
{
  if (!other.py_) { return; }
  nb::gil_scoped_acquire gil;
  try {
    py_ = std::make_unique<python_side>(nb::module_::import_("copy").attr("deepcopy")(other.py_->obj));
  } catch (nb::python_error& e) {
    throw logic_error("Python predictor '" + name_ + "': copying it (copy.deepcopy) raised " + std::string(e.what()));
  }
}

py_predictor::~py_predictor() = default;

void py_predictor::fail(char const* hook, std::string what, bool from_python) noexcept
{
  try {
    nb::object cause = nb::none();
    if (from_python) {
      std::string text;
      cause = take_exception(text);
      what = "raised " + text;
    }
    failed_ = true;
    if (log_) {
      log_->record(0, true, "Python predictor '" + name_ + "' " + what + " in " + hook + "; it is disabled",
                   std::move(cause));
    }
  } catch (...) {
    PyErr_Clear();
    failed_ = true;
  }
}

void py_predictor::on_access(access_view const& a, prefetch_plan& out)
{
  bytes_[static_cast<std::uint64_t>(a.id)] = a.bytes;
  if (failed_ || !py_) { return; }
  nb::gil_scoped_acquire gil;
  if (!py_->on_access.is_valid()) { return; }  // detached at exit
  try {
    predict(a, out);
  } catch (nb::python_error& e) {  // a conversion raised: the answer is bad
    e.restore();
    out.clear();
    fail("on_access", {}, true);
  }
}

void py_predictor::predict(access_view const& a, prefetch_plan& out)
{
  *py_->view_ptr = a;
  PyObject* args[1] = {py_->view.ptr()};
  PyObject* raw = PyObject_Vectorcall(py_->on_access.ptr(), args, 1, nullptr);
  if (raw == nullptr) {
    fail("on_access", {}, true);
    return;
  }
  nb::object const r = nb::steal(raw);
  if (r.is_none()) { return; }
  if (!PyList_Check(r.ptr()) && !PyTuple_Check(r.ptr())) {
    fail("on_access", "returned " + short_repr(r) + " (a " + py_type_name(r) + "), not a list of tensor ids", false);
    return;
  }
  Py_ssize_t const n = PySequence_Fast_GET_SIZE(r.ptr());
  PyObject** items = PySequence_Fast_ITEMS(r.ptr());
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = items[i];
    unsigned long long v = 0;
    if (PyLong_Check(item) && !PyBool_Check(item)) { v = PyLong_AsUnsignedLongLong(item); }
    if (!PyLong_Check(item) || PyBool_Check(item) || (v == static_cast<unsigned long long>(-1) && PyErr_Occurred())) {
      PyErr_Clear();
      out.clear();
      fail("on_access",
           "returned prediction #" + std::to_string(i) + " = " + short_repr(item) + ", not a tensor id (an int)", false);
      return;
    }
    if (std::find(out.tensors.begin(), out.tensors.end(), tensor_id{v}) != out.tensors.end()) { continue; }
    auto const it = bytes_.find(v);
    out.add(tensor_id{v}, it == bytes_.end() ? 0 : it->second);
  }
}

void py_predictor::on_free(tensor_id id) noexcept
{
  bytes_.erase(static_cast<std::uint64_t>(id));
  if (failed_ || !py_) { return; }
  nb::gil_scoped_acquire gil;
  if (!py_->on_free.is_valid()) { return; }
  PyObject* arg = PyLong_FromUnsignedLongLong(static_cast<std::uint64_t>(id));
  if (arg == nullptr) {
    fail("on_free", {}, true);
    return;
  }
  PyObject* args[1] = {arg};
  PyObject* r = PyObject_Vectorcall(py_->on_free.ptr(), args, 1, nullptr);
  Py_DECREF(arg);
  if (r == nullptr) {
    fail("on_free", {}, true);
    return;
  }
  Py_DECREF(r);
}

// ---- registries ----

namespace {

// A Python registration: a factory (usually the class), its description and parameters.
struct registration {
  std::string name;
  nb::object factory;
  std::string description;
  std::vector<policy_parameter> parameters;
  bool predictor{false};
};

parameter_type type_of_default(nb::handle v)
{
  if (PyBool_Check(v.ptr())) { return parameter_type::boolean; }
  if (PyLong_Check(v.ptr())) { return parameter_type::integer; }
  if (PyFloat_Check(v.ptr())) { return parameter_type::real; }
  if (nb::isinstance<nb::str>(v)) { return parameter_type::string; }
  throw logic_error("a Python policy parameter's default is a bool, int, float or str (got " + short_repr(v) + ")");
}

std::string default_text(nb::handle v)
{
  if (PyBool_Check(v.ptr())) { return v.ptr() == Py_True ? "true" : "false"; }
  return nb::cast<std::string>(nb::str(v));
}

nb::dict kwargs_of(policy_params const& p, std::vector<policy_parameter> const& params)
{
  nb::dict kw;
  for (policy_parameter const& prm : params) {
    char const* k = prm.name.c_str();
    switch (prm.type) {
      case parameter_type::boolean: kw[k] = p.get<bool>(prm.name); break;
      case parameter_type::integer: kw[k] = p.get<std::int64_t>(prm.name); break;
      case parameter_type::real: kw[k] = p.get<double>(prm.name); break;
      case parameter_type::unsigned_integer:
      case parameter_type::bytes: kw[k] = p.get<std::uint64_t>(prm.name); break;
      case parameter_type::string: kw[k] = p.get<std::string>(prm.name); break;
    }
  }
  return kw;
}

// Register `r` into `registry`, its adapters reporting to `log`.
void add_to(policy_registry& registry, registration const& r, std::shared_ptr<policy_failures> const& log)
{
  auto factory = std::make_shared<py_ref>(r.factory);
  std::string const name = r.name;
  std::vector<policy_parameter> const params = r.parameters;
  std::string const desc = r.description.empty() ? "Python policy " + short_repr(r.factory) : r.description;
  // The registry calls a factory with the GIL released (Pool(), run_grid): each takes it.
  auto bind = [factory, params](policy_params const& p) {
    nb::gil_scoped_acquire gil;
    if (params.empty()) { return std::make_shared<py_ref>(factory->obj); }
    nb::object const f = factory->obj;
    nb::dict const kw = kwargs_of(p, params);
    return std::make_shared<py_ref>(nb::module_::import_("functools").attr("partial")(f, **kw));
  };
  if (r.predictor) {
    registry.add_predictor(name, desc, params, [bind, name, log](policy_params const& p) {
      return any_prefetch_predictor{py_predictor{bind(p), name, log}};
    });
  } else {
    registry.add(name, desc, params, [bind, name, log](policy_params const& p) {
      return any_eviction_policy{py_policy{bind(p), name, log}};
    });
  }
}

std::vector<registration> python_registrations()
{
  std::vector<registration> out;
  nb::dict reg = nb::borrow<nb::dict>(policy_module().attr("_registered"));
  for (auto [k, v] : reg) {
    nb::tuple t = nb::borrow<nb::tuple>(v);  // (factory, description, parameters dict, predictor)
    registration r;
    r.name = nb::cast<std::string>(k);
    if (r.name.starts_with("predictor:")) { r.name = r.name.substr(10); }
    r.factory = nb::borrow(t[0]);
    r.description = nb::cast<std::string>(t[1]);
    for (auto [pk, pv] : nb::borrow<nb::dict>(t[2])) {
      r.parameters.push_back({nb::cast<std::string>(pk), type_of_default(pv), default_text(pv), ""});
    }
    r.predictor = nb::cast<bool>(t[3]);
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](registration const& a, registration const& b) { return a.name < b.name; });
  return out;
}

void fill(policy_host& host)
{
  host.registry = policy_registry::with_builtins();
  for (registration const& r : python_registrations()) {
    add_to(host.registry, r, host.failures);
    (r.predictor ? host.python_predictors : host.python_policies).insert(r.name);
  }
}

}  // namespace

std::shared_ptr<policy_host> make_policy_host()
{
  auto host = std::make_shared<policy_host>();
  fill(*host);
  return host;
}

policy_registry registry_with_python_policies()
{
  policy_host host;
  fill(host);
  return std::move(host.registry);
}

std::string policy_host::resolve(nb::handle spec, bool predictor)
{
  if (nb::isinstance<nb::str>(spec)) { return nb::cast<std::string>(spec); }
  if (!PyCallable_Check(spec.ptr())) {
    throw logic_error(std::string(predictor ? "a prefetch predictor" : "a policy") +
                      " is a spec (str) or a Python class / factory (got " + short_repr(spec) + ")");
  }
  std::string const base = python_name(spec);
  std::string name = base;
  auto taken = [&](std::string const& n) {
    return predictor ? registry.contains_predictor(n) : registry.contains(n);
  };
  for (int i = 2; taken(name); ++i) { name = base + "_" + std::to_string(i); }
  registration r;
  r.name = name;
  r.factory = nb::borrow(spec);
  r.predictor = predictor;
  add_to(registry, r, failures);
  (predictor ? python_predictors : python_policies).insert(name);
  return name;
}

bool policy_host::is_python(std::string_view spec, bool predictor) const
{
  std::string_view const name = spec.substr(0, spec.find(':'));
  auto const& names = predictor ? python_predictors : python_policies;
  return names.find(name) != names.end();
}

// ---- bindings ----

namespace {

/// A policy driven by hand, for tests and the conformance harness (tierpool.conformance):
/// the same adapter a Pool uses for a Python policy, or a built-in from its spec.
struct policy_driver {
  std::shared_ptr<policy_host> host;
  std::optional<any_eviction_policy> policy;
  eviction_proposal out;
};

// PolicyDriver.on_insert / on_access: a TensorView from its fields, given to `Hook`.
template <void (any_eviction_policy::*Hook)(tensor_view const&) noexcept>
void drive_view(policy_driver& d, std::uint64_t id, std::size_t bytes, std::uint32_t tier, tick last_access,
                std::uint32_t access_count, bool pinned, bool write_access, std::optional<tick> next_use,
                tick transfer_cost, std::optional<tick> recompute_cost, bool prefetch)
{
  tensor_view v;
  v.id = tensor_id{id};
  v.tier = tier_id{tier};
  v.bytes = bytes;
  v.last_access = last_access;
  v.access_count = access_count;
  v.pinned = pinned;
  v.write_access = write_access;
  v.next_use = next_use;
  v.transfer_cost = transfer_cost;
  v.recompute_cost = recompute_cost;
  v.prefetch = prefetch;
  ((*d.policy).*Hook)(v);
}

// One of those hooks on `cls`, with the TensorView fields as keyword arguments.
template <class Class, class Fn>
void def_view_hook(Class& cls, char const* name, Fn fn, char const* doc)
{
  cls.def(name, fn, "id"_a, "bytes"_a = 0, "tier"_a = 0, "last_access"_a = 0, "access_count"_a = 1,
          "pinned"_a = false, "write_access"_a = false, "next_use"_a.none() = nb::none(), "transfer_cost"_a = 0,
          "recompute_cost"_a.none() = nb::none(), "prefetch"_a = false, doc);
}

}  // namespace

void bind_python_policies(nb::module_& m)
{
  nb::class_<tensor_view>(m, "TensorView",
                          "What an eviction policy is told about a tensor (EvictionPolicy.on_insert / on_access). "
                          "The adapter reuses one TensorView for every call: read its fields during the call, do "
                          "not keep it.")
      .def_prop_ro("id", [](tensor_view const& v) { return static_cast<std::uint64_t>(v.id); }, "The tensor's id.")
      .def_prop_ro("tier", [](tensor_view const& v) { return static_cast<std::uint32_t>(v.tier); },
                   "The tier whose policy is told (index, fastest first).")
      .def_ro("bytes", &tensor_view::bytes, "Size of the tensor's copy in this tier.")
      .def_ro("last_access", &tensor_view::last_access, "Tick of the event reported (backend clock).")
      .def_ro("access_count", &tensor_view::access_count, "Accesses so far, this one included.")
      .def_ro("pinned", &tensor_view::pinned, "Pinned now (a pinned tensor must never be proposed).")
      .def_ro("write_access", &tensor_view::write_access, "on_access: the access writes the tensor.")
      .def_prop_ro(
          "next_use",
          [](tensor_view const& v) -> std::optional<std::uint64_t> {
            if (!v.next_use) { return std::nullopt; }
            return static_cast<std::uint64_t>(*v.next_use);
          },
          "Forecast tick of the next use (None: no forecast; NO_NEXT_USE: never again).")
      .def_ro("transfer_cost", &tensor_view::transfer_cost, "Estimated ticks to move it out and back (0: unknown).")
      .def_ro("recompute_cost", &tensor_view::recompute_cost, "Estimated ticks to recompute it (None: it cannot be).")
      .def_ro("prefetch", &tensor_view::prefetch,
              "on_insert: a prefetch copied it in ahead of its use; not a use (the use comes as on_access).")
      .def("__repr__", [](tensor_view const& v) {
        return "TensorView(id=" + std::to_string(static_cast<std::uint64_t>(v.id)) +
               ", tier=" + std::to_string(static_cast<std::uint32_t>(v.tier)) + ", bytes=" + std::to_string(v.bytes) +
               ", last_access=" + std::to_string(v.last_access) + ", access_count=" + std::to_string(v.access_count) +
               ", pinned=" + (v.pinned ? "True" : "False") + ")";
      }, "The fields.");

  nb::class_<eviction_request>(m, "EvictionRequest",
                               "What EvictionPolicy.propose is asked: free `bytes_needed` bytes in tier `tier` "
                               "(`from_` is the same). Reused for every call, like TensorView.")
      .def_prop_ro("tier", [](eviction_request const& r) { return static_cast<std::uint32_t>(r.from); },
                   "The tier that lacks room (the policy's own).")
      .def_prop_ro("from_", [](eviction_request const& r) { return static_cast<std::uint32_t>(r.from); },
                   "The C++ field `from`: the same as `tier`.")
      .def_ro("bytes_needed", &eviction_request::bytes_needed, "Free at least this much in total.")
      .def_ro("contiguous_bytes", &eviction_request::contiguous_bytes,
              "The largest single allocation the room must hold (0: no contiguity need).")
      .def_ro("now", &eviction_request::now, "Tick of the request.")
      .def_prop_ro("incoming", [](eviction_request const& r) { return static_cast<std::uint64_t>(r.incoming); },
                   "The tensor the room is for when the engine knows it, else 0.")
      .def("__repr__", [](eviction_request const& r) {
        return "EvictionRequest(tier=" + std::to_string(static_cast<std::uint32_t>(r.from)) +
               ", bytes_needed=" + std::to_string(r.bytes_needed) + ", contiguous_bytes=" +
               std::to_string(r.contiguous_bytes) + ", now=" + std::to_string(r.now) +
               ", incoming=" + std::to_string(static_cast<std::uint64_t>(r.incoming)) + ")";
      }, "The fields.");

  nb::class_<access_view>(m, "AccessView",
                          "A device acquire, as a Predictor sees it (Predictor.on_access). Reused for every call.")
      .def_prop_ro("id", [](access_view const& a) { return static_cast<std::uint64_t>(a.id); }, "The tensor acquired.")
      .def_ro("bytes", &access_view::bytes, "Its size.")
      .def_ro("write", &access_view::write, "The lease may write it.")
      .def_ro("sequence", &access_view::sequence, "Number of this access among the pool's device acquires.")
      .def_ro("stream", &access_view::stream, "The stream it was acquired on.")
      .def_ro("discard", &access_view::discard, "access='write_discard': the old bytes are not read.")
      .def("__repr__", [](access_view const& a) {
        return "AccessView(id=" + std::to_string(static_cast<std::uint64_t>(a.id)) + ", bytes=" +
               std::to_string(a.bytes) + ", sequence=" + std::to_string(a.sequence) + ")";
      }, "The fields.");

  m.attr("NO_NEXT_USE") = static_cast<std::uint64_t>(no_next_use);

  m.def(
      "_builtin_policy_names",
      [](bool predictor) {
        auto const r = policy_registry::with_builtins();
        std::vector<std::string> out;
        for (policy_info const& i : predictor ? r.list_predictors() : r.list()) { out.push_back(i.name); }
        return out;
      },
      "predictor"_a = false, "Names of the built-in policies (or predictors).");
  m.def("_detach_python_objects", &detach_all_python_objects,
        "At interpreter exit: every pool's Python policies and predictors let go of their Python objects "
        "(lru decides from then on), breaking reference cycles the garbage collector cannot see.");

  nb::class_<policy_driver> driver(m, "PolicyDriver",
                            "One eviction policy driven by hand (tests, tierpool.conformance): a spec of the "
                            "registry ('lru', a registered Python policy) or a Python class, through the same "
                            "adapter a Pool uses. Hooks take the TensorView fields as arguments.");
  def_view_hook(driver, "on_insert", &drive_view<&any_eviction_policy::on_insert>,
                "Tell the policy a tensor became resident.");
  def_view_hook(driver, "on_access", &drive_view<&any_eviction_policy::on_access>, "Tell the policy a tensor was used.");
  driver
      .def(
          "__init__",
          [](policy_driver* self, nb::handle spec) {
            new (self) policy_driver{};
            self->host = make_policy_host();
            std::string const s = self->host->resolve(spec, false);
            self->policy.emplace(self->host->registry.create(s));
          },
          "policy"_a, "Build the policy (a spec or a class). Raises LogicError for an unknown spec.")
      .def("on_erase", [](policy_driver& d, std::uint64_t id) { d.policy->on_erase(tensor_id{id}); }, "id"_a,
           "Tell the policy a tensor left the tier.")
      .def("on_pin", [](policy_driver& d, std::uint64_t id) { d.policy->on_pin(tensor_id{id}); }, "id"_a,
           "Tell the policy a tensor was pinned.")
      .def("on_unpin", [](policy_driver& d, std::uint64_t id) { d.policy->on_unpin(tensor_id{id}); }, "id"_a,
           "Tell the policy a tensor was unpinned.")
      .def(
          "propose",
          [](policy_driver& d, std::size_t bytes_needed, std::size_t contiguous_bytes, tick now, std::uint64_t incoming,
             std::uint32_t tier) {
            eviction_request req;
            req.from = tier_id{tier};
            req.bytes_needed = bytes_needed;
            req.contiguous_bytes = contiguous_bytes;
            req.now = now;
            req.incoming = tensor_id{incoming};
            d.policy->propose(req, d.out);
            std::vector<std::uint64_t> ids;
            ids.reserve(d.out.victims.size());
            for (tensor_id v : d.out.victims) { ids.push_back(static_cast<std::uint64_t>(v)); }
            return nb::make_tuple(ids, d.out.bytes);
          },
          "bytes_needed"_a, "contiguous_bytes"_a = 0, "now"_a = 0, "incoming"_a = 0, "tier"_a = 0,
          "Ask for victims: returns (ids, bytes) as the engine would get them (for a Python policy, after the "
          "adapter's checks: a refused answer is replaced by the fallback lru's).")
      .def_prop_ro("name", [](policy_driver const& d) { return std::string(d.policy->name()); }, "The policy's name.")
      .def("validate", [](policy_driver const& d) { return d.policy->validate(); },
           "The policy's own consistency check (a Python policy: its fallback lru's).")
      .def_prop_ro(
          "failed",
          [](policy_driver& d) {
            auto const* p = d.policy->target<py_policy>();
            return p != nullptr && p->failed();
          },
          "True once a Python policy failed and its fallback lru answers.")
      .def_prop_ro(
          "python_object",
          [](policy_driver& d) -> nb::object {
            auto const* p = d.policy->target<py_policy>();
            if (p == nullptr) { return nb::none(); }
            return nb::borrow(p->object());
          },
          "The Python policy object (None for a built-in).")
      .def(
          "copy",
          [](policy_driver const& d) {
            policy_driver c;
            c.host = d.host;
            c.policy.emplace(*d.policy);  // any_eviction_policy's copy: a Python policy is deep-copied
            return c;
          },
          "A copy of the policy, state included, as the C++ side copies one (a Python policy: copy.deepcopy).")
      .def("check", [](policy_driver const& d) { d.host->check(); },
           "Raise the Python policy's recorded failure (PolicyError) once, if there is one.");
}

}  // namespace tierpool::python
