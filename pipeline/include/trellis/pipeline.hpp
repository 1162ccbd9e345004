// Umbrella header of trellis::pipeline: executors, time, futures, tasks, buffers, messages,
// channels and pipelines.
#pragma once

#include <trellis/pipeline/abstract_scheduled_event_executor.hpp>
#include <trellis/pipeline/awaitables.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/event_executor.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/promise.hpp>
#include <trellis/pipeline/scheduled_future.hpp>
#include <trellis/pipeline/task.hpp>
#include <trellis/pipeline/thread_pool_executor.hpp>
#include <trellis/pipeline/unique_function.hpp>
