// EgressTarget: one network target a run may reach, as CodeActProvider::AddNetworkTarget (or
// `--allow-domain`) parsed it from the text a user gave. One grammar for both backends:
//
//   TARGET[:METHODS]
//   TARGET  = https://HOST[:PORT] | http://HOST[:PORT] | HOST      (a bare HOST: https, port 443)
//   METHODS = METHOD[,METHOD...]   GET POST PUT DELETE HEAD OPTIONS PATCH, any case
//
// HOST is a DNS name (letters, digits, '-', '.'), an IPv4 address or a bracketed IPv6 address;
// it is lower-cased. No path, query, user or wildcard: a request matches a target when its
// scheme, host and port are exactly the target's (a default port equals no port) and its method
// is listed (no METHODS: any of the above). CONNECT and TRACE are never allowed (the Hyperlight
// SDK blocks them), so naming one is an error, as is any other word: a typo must not silently
// allow or block something. Parsed once, when added: a run's snapshot carries these values.
#pragma once

#include <string>
#include <vector>

namespace codeact {

struct EgressTarget {
  std::string text;                  // as the user wrote it: lists, messages, the fingerprint
  std::string scheme;                // "https" or "http"
  std::string host;                  // lower-case; an IPv6 address keeps its brackets
  int port = 0;                      // 0: the scheme's default (443 or 80)
  std::vector<std::string> methods;  // upper-case, without duplicates; empty: all allowed ones

  // "https://api.example.com", "http://127.0.0.1:8080": the URL form the Hyperlight SDK's
  // allow_domain parses (a default port is left out, as the SDK's URL parser drops it anyway).
  std::string Url() const;
  // The URL followed by the methods, for the model and for messages: "https://x.org (GET, POST)".
  std::string Display() const;
};

}  // namespace codeact
