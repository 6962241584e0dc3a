// SPDX-License-Identifier: Apache-2.0
// The web config's TLS check at load time (web_config_tls.cc), for the
// validation in web_config.cc. The server's own setup is
// ConfigureTlsServerContext in web_config.h.
#pragma once

#include <optional>

#include "exporter/http/web_config.h"

namespace drivewatch {

// Sets `tls` up on a throwaway server context, so a certificate, key or
// client CA file that would not load is refused before the server needs
// it. The problem's key is "" when OpenSSL could not make a context.
std::optional<TlsSetupProblem> CheckTlsServerConfig(const TlsServerConfig& tls);

}  // namespace drivewatch
