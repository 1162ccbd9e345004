// Umbrella header of the HTTP/1.1 client (namespace trellis::http).
#pragma once

#include <trellis/http.hpp>
#include <trellis/http_client/http_client.hpp>
