// Fuzz support: a fuzzer's bytes as the words of a control request (split at spaces and newlines, empty
// words dropped), for the targets that feed a request's arguments to its parser.
#pragma once

#include <string>
#include <vector>

namespace shoal::fuzz {

inline std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    if (c == ' ' || c == '\n') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

}  // namespace shoal::fuzz
