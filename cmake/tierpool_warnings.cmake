# tierpool_set_warnings(target): warnings for tierpool's own code, PRIVATE so they never reach consumers.
function(tierpool_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow
      -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wnull-dereference
      $<$<BOOL:${TIERPOOL_WARNINGS_AS_ERRORS}>:-Werror>>)
endfunction()

# tierpool_set_sanitizers(target): applies TIERPOOL_SANITIZE to one of tierpool's own targets.
function(tierpool_set_sanitizers target)
  if(TIERPOOL_SANITIZE STREQUAL "")
    return()
  endif()
  string(REPLACE "+" "," _san "${TIERPOOL_SANITIZE}")
  target_compile_options(${target} PRIVATE -fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(${target} PRIVATE -fsanitize=${_san})
  # ASan cannot see an index past the end of a std::array inside a struct (the bytes after
  # it are the struct's own); the library's bounds assertions can. They change no ABI.
  if(NOT TIERPOOL_SANITIZE STREQUAL "thread")
    target_compile_definitions(${target} PRIVATE _GLIBCXX_ASSERTIONS)
  endif()
endfunction()
