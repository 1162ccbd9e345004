// The pipeline's list management, head and tail (see channel_pipeline.hpp).
#include <trellis/pipeline/channel_pipeline.hpp>

#include <algorithm>

#include <spdlog/spdlog.h>

#include <trellis/pipeline/channel.hpp>

#include "pipeline_internal.hpp"

namespace trellis {

namespace detail {

// The head and the tail hold no state (each call finds its channel through the context), so
// every pipeline shares one instance of each: see shared_stateless() below.

// The head: hands outbound operations to the transport (Channel::Unsafe) and asks for more data
// after channel_active and channel_read_complete when auto_read is on.
class PipelineHead final : public ChannelDuplexHandler {
 public:
  bool is_sharable() const noexcept override { return true; }

  void bind(ChannelHandlerContext& ctx, const SocketAddress& local, ChannelPromise p) override {
    ctx.channel().unsafe().bind(local, std::move(p));
  }
  void connect(ChannelHandlerContext& ctx, const SocketAddress& remote,
               const std::optional<SocketAddress>& local, ChannelPromise p) override {
    ctx.channel().unsafe().connect(remote, local, std::move(p));
  }
  void disconnect(ChannelHandlerContext& ctx, ChannelPromise p) override {
    ctx.channel().unsafe().disconnect(std::move(p));
  }
  void close(ChannelHandlerContext& ctx, ChannelPromise p) override {
    ctx.channel().unsafe().close(std::move(p));
  }
  void read(ChannelHandlerContext& ctx) override { ctx.channel().unsafe().begin_read(); }
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) override {
    ctx.channel().unsafe().write(std::move(msg), std::move(p));
  }
  void flush(ChannelHandlerContext& ctx) override { ctx.channel().unsafe().flush(); }
  void shutdown_output(ChannelHandlerContext& ctx, ChannelPromise p) override {
    ctx.channel().unsafe().shutdown_output(std::move(p));
  }

  void channel_active(ChannelHandlerContext& ctx) override {
    ctx.fire_channel_active();
    read_if_auto_read(ctx.channel());
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    ctx.fire_channel_read_complete();
    read_if_auto_read(ctx.channel());
  }
  void channel_unregistered(ChannelHandlerContext& ctx) override {
    ctx.fire_channel_unregistered();
    // A closed channel will not be registered again: let the handlers free what they hold.
    if (!ctx.channel().is_open()) ctx.pipeline().remove_all();
  }

 private:
  static void read_if_auto_read(Channel& channel) {
    if (channel.config().auto_read()) channel.read();
  }
};

// The tail: what arrives here was not consumed by any handler; the channel decides (log and
// drop by default; EmbeddedChannel keeps it for the test).
class PipelineTail final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }

  void channel_registered(ChannelHandlerContext&) override {}
  void channel_unregistered(ChannelHandlerContext&) override {}
  void channel_active(ChannelHandlerContext&) override {}
  void channel_inactive(ChannelHandlerContext&) override {}
  void channel_writability_changed(ChannelHandlerContext&) override {}
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.channel().on_unhandled_inbound_message(std::move(msg));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    ctx.channel().on_unhandled_read_complete();
  }
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override {
    ctx.channel().on_unhandled_user_event(std::move(event));
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override {
    ctx.channel().on_unhandled_inbound_exception(std::move(error));
  }
};

namespace {

// A pointer to one process-wide instance of H, never destroyed (channels may outlive static
// destruction), without a control block: copying it touches no shared reference count.
template <class H>
std::shared_ptr<ChannelHandler> shared_stateless() {
  static H* const instance = new H();
  return std::shared_ptr<ChannelHandler>(std::shared_ptr<void>(), instance);
}

}  // namespace

std::string describe_exception(const std::exception_ptr& error) {
  if (!error) return "no exception";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace detail

// Removed contexts wait here until no event can still be running through them: they are freed
// by a task queued on the loop (which runs after the current callback has returned), unless an
// operation posted from another thread or a spawned task pinned them. A removed context keeps its
// prev_/next_ (an event in flight carries on past it), so when a neighbour it points to is freed
// first the pointer moves on to that neighbour's own neighbour: a pinned context's pointers only
// ever lead to live or buried contexts, and at worst to the head or tail.
// Once the channel is closed no context is freed before the pipeline itself: a thread that still
// holds the channel may call a context the close removed, and its operation then walks the old
// chain to the head, which fails it with ClosedChannelError. The reaper still lets go of the
// handlers of those contexts (unless pinned): a handler holding its own channel would otherwise
// keep it alive through its context forever.
struct ChannelPipeline::Graveyard {
  std::vector<std::unique_ptr<ChannelHandlerContext>> contexts;
  bool reap_queued = false;
  bool keep_all = false;  // the channel closed: kept until the pipeline is destroyed

  static bool is_free(const ChannelHandlerContext* c) noexcept {
    return c->pins_.load(std::memory_order_acquire) == 0;
  }

  void reap() noexcept {
    reap_queued = false;
    if (keep_all) {
      for (auto& c : contexts) {
        if (is_free(c.get())) c->release_handler();
      }
      return;
    }
    // The common case (an initializer removed itself, nobody pins it): free all, no bookkeeping.
    if (std::all_of(
            contexts.begin(), contexts.end(),
            [](const std::unique_ptr<ChannelHandlerContext>& c) { return is_free(c.get()); })) {
      std::vector<std::unique_ptr<ChannelHandlerContext>>().swap(contexts);
      return;
    }
    // The pins are read once: a context pinned after this point is not freed now.
    std::vector<ChannelHandlerContext*> doomed;
    for (auto& c : contexts) {
      if (is_free(c.get())) doomed.push_back(c.get());
    }
    if (doomed.empty()) return;
    auto is_doomed = [&](const ChannelHandlerContext* c) {
      return std::find(doomed.begin(), doomed.end(), c) != doomed.end();
    };
    for (auto& c : contexts) {
      if (is_doomed(c.get())) continue;
      while (is_doomed(c->prev_)) c->prev_ = c->prev_->prev_;
      while (is_doomed(c->next_)) c->next_ = c->next_->next_;
    }
    std::erase_if(contexts, [&](const std::unique_ptr<ChannelHandlerContext>& c) {
      return is_doomed(c.get());
    });
    // Give the array back: a pipeline that buried its initializer holds nothing afterwards.
    if (contexts.empty()) std::vector<std::unique_ptr<ChannelHandlerContext>>().swap(contexts);
  }

  // The pipeline is destroyed: free what nobody pins, orphan the rest.
  void release_all() noexcept {
    for (auto& c : contexts) ChannelHandlerContext::release(c.release());
    contexts.clear();
  }
};

ChannelPipeline::ChannelPipeline(Channel& channel) : channel_(&channel) {
  head_ = new ChannelHandlerContext(*this, channel, "head",
                                    detail::shared_stateless<detail::PipelineHead>());
  tail_ = new ChannelHandlerContext(*this, channel, "tail",
                                    detail::shared_stateless<detail::PipelineTail>());
  head_->next_ = tail_;
  tail_->prev_ = head_;
}

ChannelPipeline::~ChannelPipeline() {
  for (ChannelHandlerContext* c = head_; c != nullptr;) {
    ChannelHandlerContext* next = c == tail_ ? nullptr : c->next_;
    if (c != head_ && c != tail_ && !c->handler_->is_sharable()) c->handler_->added_ = false;
    ChannelHandlerContext::release(c);  // a context an operation still pins is freed by it
    c = next;
  }
  if (graveyard_) graveyard_->release_all();
}

// --- modification ------------------------------------------------------------------------------

void ChannelPipeline::check_modifiable() const {
  if (channel_->is_registered() && !channel_->event_loop().in_event_loop()) {
    throw IllegalStateError("a registered channel's pipeline is modified on its event loop only");
  }
}

ChannelHandlerContext* ChannelPipeline::find(std::string_view name) const noexcept {
  for (ChannelHandlerContext* c = head_->next_; c != tail_; c = c->next_) {
    if (c->name_ == name) return c;
  }
  return nullptr;
}

ChannelHandlerContext* ChannelPipeline::find_or_throw(std::string_view name) const {
  auto* c = find(name);
  if (c == nullptr) {
    throw ChannelPipelineError("no handler named '" + std::string(name) + "' in the pipeline");
  }
  return c;
}

std::string ChannelPipeline::check_name(std::string name) {
  if (name.empty()) {
    do {
      name = "handler#" + std::to_string(generated_names_++);
    } while (find(name) != nullptr);
    return name;
  }
  if (name == "head" || name == "tail" || find(name) != nullptr) {
    throw ChannelPipelineError("duplicate handler name: '" + name + "'");
  }
  return name;
}

ChannelHandlerContext* ChannelPipeline::new_context(std::string name,
                                                    std::shared_ptr<ChannelHandler> handler,
                                                    std::uint32_t mask) {
  if (!handler) throw InvalidArgumentError("null handler '" + name + "'");
  if (!handler->is_sharable()) {
    bool expected = false;
    if (!handler->added_.compare_exchange_strong(expected, true)) {
      throw ChannelPipelineError("handler '" + name +
                                 "' is not sharable and is already in a pipeline; override "
                                 "is_sharable() or use a new instance per channel");
    }
  }
  return new ChannelHandlerContext(*this, *channel_, std::move(name), std::move(handler), mask);
}

void ChannelPipeline::link_after(ChannelHandlerContext* prev, ChannelHandlerContext* ctx) noexcept {
  ctx->prev_ = prev;
  ctx->next_ = prev->next_;
  prev->next_->prev_ = ctx;
  prev->next_ = ctx;
  ++size_;
}

void ChannelPipeline::call_handler_added(ChannelHandlerContext* ctx) {
  try {
    ctx->handler_->handler_added(*ctx);
  } catch (...) {
    auto what = detail::describe_exception(std::current_exception());
    remove_context(ctx);
    fire_exception_caught(std::make_exception_ptr(ChannelPipelineError(
        "handler_added of '" + ctx->name_ + "' threw (handler removed): " + what)));
  }
}

void ChannelPipeline::call_handler_removed(ChannelHandlerContext* ctx) {
  try {
    ctx->handler_->handler_removed(*ctx);
  } catch (...) {
    fire_exception_caught(std::make_exception_ptr(
        ChannelPipelineError("handler_removed of '" + ctx->name_ +
                             "' threw: " + detail::describe_exception(std::current_exception()))));
  }
}

void ChannelPipeline::bury(ChannelHandlerContext* ctx) {
  if (!graveyard_) graveyard_ = std::make_shared<Graveyard>();  // most pipelines never need one
  graveyard_->contexts.emplace_back(ctx);
  if (graveyard_->reap_queued) return;
  graveyard_->reap_queued = true;
  try {
    channel_->event_loop().execute([g = graveyard_] { g->reap(); });
  } catch (...) {
    // The loop is gone: the contexts are freed with the pipeline.
    graveyard_->reap_queued = false;
  }
}

std::shared_ptr<ChannelHandler> ChannelPipeline::remove_context(ChannelHandlerContext* ctx) {
  // The context keeps its own prev_/next_: an event in flight in it carries on past it.
  ctx->prev_->next_ = ctx->next_;
  ctx->next_->prev_ = ctx->prev_;
  ctx->removed_ = true;
  --size_;
  call_handler_removed(ctx);
  std::shared_ptr<ChannelHandler> handler = ctx->handler_;
  if (!handler->is_sharable()) handler->added_ = false;
  bury(ctx);
  return handler;
}

ChannelPipeline& ChannelPipeline::insert(Where where, std::string_view base_name, std::string name,
                                         std::shared_ptr<ChannelHandler> handler,
                                         std::uint32_t mask) {
  check_modifiable();
  ChannelHandlerContext* prev = nullptr;
  switch (where) {
    case Where::kFirst:
      prev = head_;
      break;
    case Where::kLast:
      break;  // tail_->prev_, read once the name is checked
    case Where::kBefore:
      prev = find_or_throw(base_name);  // its prev_, read once the name is checked
      break;
    case Where::kAfter:
      prev = find_or_throw(base_name);
      break;
  }
  auto* ctx = new_context(check_name(std::move(name)), std::move(handler), mask);
  if (where == Where::kLast) prev = tail_->prev_;
  if (where == Where::kBefore) prev = prev->prev_;
  link_after(prev, ctx);
  call_handler_added(ctx);
  return *this;
}

ChannelPipeline& ChannelPipeline::add_first(std::string name,
                                            std::shared_ptr<ChannelHandler> handler) {
  return insert(Where::kFirst, {}, std::move(name), std::move(handler), handler_mask::kAll);
}

ChannelPipeline& ChannelPipeline::add_last(std::string name,
                                           std::shared_ptr<ChannelHandler> handler) {
  return insert(Where::kLast, {}, std::move(name), std::move(handler), handler_mask::kAll);
}

ChannelPipeline& ChannelPipeline::add_before(std::string_view base_name, std::string name,
                                             std::shared_ptr<ChannelHandler> handler) {
  return insert(Where::kBefore, base_name, std::move(name), std::move(handler), handler_mask::kAll);
}

ChannelPipeline& ChannelPipeline::add_after(std::string_view base_name, std::string name,
                                            std::shared_ptr<ChannelHandler> handler) {
  return insert(Where::kAfter, base_name, std::move(name), std::move(handler), handler_mask::kAll);
}

std::shared_ptr<ChannelHandler> ChannelPipeline::remove(std::string_view name) {
  check_modifiable();
  return remove_context(find_or_throw(name));
}

std::shared_ptr<ChannelHandler> ChannelPipeline::remove(const ChannelHandler& handler) {
  check_modifiable();
  auto* ctx = context(handler);
  if (ctx == nullptr) throw ChannelPipelineError("handler is not in the pipeline");
  return remove_context(ctx);
}

std::shared_ptr<ChannelHandler> ChannelPipeline::remove_first() {
  check_modifiable();
  if (head_->next_ == tail_) throw ChannelPipelineError("the pipeline is empty");
  return remove_context(head_->next_);
}

std::shared_ptr<ChannelHandler> ChannelPipeline::remove_last() {
  check_modifiable();
  if (tail_->prev_ == head_) throw ChannelPipelineError("the pipeline is empty");
  return remove_context(tail_->prev_);
}

std::shared_ptr<ChannelHandler> ChannelPipeline::replace(std::string_view old_name,
                                                         std::string new_name,
                                                         std::shared_ptr<ChannelHandler> handler) {
  return replace_context(old_name, std::move(new_name), std::move(handler), handler_mask::kAll);
}

std::shared_ptr<ChannelHandler> ChannelPipeline::replace_context(
    std::string_view old_name, std::string new_name, std::shared_ptr<ChannelHandler> handler,
    std::uint32_t mask) {
  check_modifiable();
  auto* old_ctx = find_or_throw(old_name);
  if (new_name.empty() || new_name != old_ctx->name_) new_name = check_name(std::move(new_name));
  auto* ctx = new_context(std::move(new_name), std::move(handler), mask);
  ctx->prev_ = old_ctx->prev_;
  ctx->next_ = old_ctx->next_;
  old_ctx->prev_->next_ = ctx;
  old_ctx->next_->prev_ = ctx;
  // An event in flight at the old handler goes on through the new one, in both directions.
  old_ctx->prev_ = ctx;
  old_ctx->next_ = ctx;
  old_ctx->removed_ = true;
  call_handler_added(ctx);
  call_handler_removed(old_ctx);
  std::shared_ptr<ChannelHandler> old = old_ctx->handler_;
  if (!old->is_sharable()) old->added_ = false;
  bury(old_ctx);
  return old;
}

void ChannelPipeline::remove_all() {
  check_modifiable();
  while (tail_->prev_ != head_) remove_context(tail_->prev_);
  // The channel's teardown: other threads may still call the contexts (see Graveyard).
  if (graveyard_ && !channel_->is_open()) graveyard_->keep_all = true;
}

// --- lookup ------------------------------------------------------------------------------------

std::shared_ptr<ChannelHandler> ChannelPipeline::get(std::string_view name) const {
  auto* c = find(name);
  return c ? c->handler_ : nullptr;
}

ChannelHandlerContext* ChannelPipeline::context(std::string_view name) const noexcept {
  return find(name);
}

ChannelHandlerContext* ChannelPipeline::context(const ChannelHandler& handler) const noexcept {
  for (ChannelHandlerContext* c = head_->next_; c != tail_; c = c->next_) {
    if (c->handler_.get() == &handler) return c;
  }
  return nullptr;
}

std::shared_ptr<ChannelHandler> ChannelPipeline::first() const {
  return head_->next_ == tail_ ? nullptr : head_->next_->handler_;
}

std::shared_ptr<ChannelHandler> ChannelPipeline::last() const {
  return tail_->prev_ == head_ ? nullptr : tail_->prev_->handler_;
}

std::vector<std::string> ChannelPipeline::names() const {
  std::vector<std::string> out;
  out.reserve(size_);
  for (ChannelHandlerContext* c = head_->next_; c != tail_; c = c->next_) out.push_back(c->name_);
  return out;
}

// --- inbound events ----------------------------------------------------------------------------

template <class Fn>
void ChannelPipeline::on_loop(Fn fn) {
  if (detail::in_executor(channel_->event_loop())) {
    fn(head_);
  } else {
    channel_->event_loop().execute(
        [pin = ChannelHandlerContext::Pin(head_), fn = std::move(fn)]() mutable {
          if (!pin.get()->is_orphaned()) fn(pin.get());
        });
  }
}

ChannelPipeline& ChannelPipeline::fire_channel_registered() {
  on_loop([](ChannelHandlerContext* h) { h->invoke_channel_registered(); });
  return *this;
}
ChannelPipeline& ChannelPipeline::fire_channel_unregistered() {
  on_loop([](ChannelHandlerContext* h) { h->invoke_channel_unregistered(); });
  return *this;
}
ChannelPipeline& ChannelPipeline::fire_channel_active() {
  on_loop([](ChannelHandlerContext* h) { h->invoke_channel_active(); });
  return *this;
}
ChannelPipeline& ChannelPipeline::fire_channel_inactive() {
  on_loop([](ChannelHandlerContext* h) {
    h->invoke_channel_inactive();
    // After the handlers saw the event, so a task's clean-up finds them told.
    h->pipeline().cancel_spawned_tasks();
  });
  return *this;
}

void ChannelPipeline::add_spawned_task(Future<void> task) {
  if (spawned_tasks_.size() >= spawned_prune_at_) {
    std::erase_if(spawned_tasks_, [](const Future<void>& f) { return f.is_done(); });
    // Amortised: prune again only once the list doubled.
    spawned_prune_at_ = std::max<std::size_t>(16, spawned_tasks_.size() * 2);
  }
  spawned_tasks_.push_back(std::move(task));
}

void ChannelPipeline::cancel_spawned_tasks() noexcept {
  // A cancelled task may run (and spawn) right here: take the list first.
  std::vector<Future<void>> tasks;
  tasks.swap(spawned_tasks_);
  for (auto& f : tasks) f.cancel();
}
ChannelPipeline& ChannelPipeline::fire_channel_read_complete() {
  on_loop([](ChannelHandlerContext* h) { h->invoke_channel_read_complete(); });
  return *this;
}
ChannelPipeline& ChannelPipeline::fire_channel_writability_changed() {
  on_loop([](ChannelHandlerContext* h) { h->fire_channel_writability_changed(); });
  return *this;
}

ChannelPipeline& ChannelPipeline::fire_exception_caught(std::exception_ptr error) {
  on_loop([e = std::move(error)](ChannelHandlerContext* h) mutable {
    h->fire_exception_caught(std::move(e));
  });
  return *this;
}

ChannelPipeline& ChannelPipeline::fire_channel_read(Message&& msg) {
  if (detail::in_executor(channel_->event_loop())) [[likely]] {
    head_->fire_channel_read(std::move(msg));
  } else {
    on_loop([m = std::move(msg)](ChannelHandlerContext* h) mutable {
      h->fire_channel_read(std::move(m));
    });
  }
  return *this;
}

ChannelPipeline& ChannelPipeline::fire_user_event_triggered(Message&& event) {
  on_loop([e = std::move(event)](ChannelHandlerContext* h) mutable {
    h->fire_user_event_triggered(std::move(e));
  });
  return *this;
}

// --- outbound operations -----------------------------------------------------------------------

void ChannelPipeline::bind(const SocketAddress& local, ChannelPromise promise) {
  tail_->bind(local, std::move(promise));
}
void ChannelPipeline::connect(const SocketAddress& remote, ChannelPromise promise) {
  tail_->connect(remote, std::nullopt, std::move(promise));
}
void ChannelPipeline::connect(const SocketAddress& remote,
                              const std::optional<SocketAddress>& local, ChannelPromise promise) {
  tail_->connect(remote, local, std::move(promise));
}
void ChannelPipeline::disconnect(ChannelPromise promise) { tail_->disconnect(std::move(promise)); }
void ChannelPipeline::close(ChannelPromise promise) { tail_->close(std::move(promise)); }
void ChannelPipeline::read() { tail_->read(); }
void ChannelPipeline::write(Message&& msg, ChannelPromise promise) {
  tail_->write(std::move(msg), std::move(promise));
}
void ChannelPipeline::flush() { tail_->flush(); }
void ChannelPipeline::shutdown_output(ChannelPromise promise) {
  tail_->shutdown_output(std::move(promise));
}
void ChannelPipeline::write_and_flush(Message&& msg, ChannelPromise promise) {
  tail_->write(std::move(msg), std::move(promise));
  tail_->flush();
}

}  // namespace trellis
