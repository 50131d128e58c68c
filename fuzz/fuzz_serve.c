/* libFuzzer target: the two text readers and writers of `ravlt serve` written here
 * (apps/serve_predict.c): the base64 decoder of KServe v2 BYTES inputs and the JSON error
 * body. Checks: the decoder returns -1 or a length within 3/4 of the input, and what it
 * accepts re-encodes to the same text (up to padding and the URL-safe alphabet); an error
 * body built from any bytes is JSON that cJSON reads back to one string, the message with
 * its line breaks made spaces. */
#include "apps/serve.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  const char *in = (const char *)data;
  unsigned char *out = malloc(size / 4 * 3 + 3);
  if (!out) return 0;
  long n = srv_base64_decode(out, in, size);
  if (n < -1 || (n >= 0 && (size_t)n > size / 4 * 3 + 2)) abort();
  if (n >= 0) { /* re-encode and compare with the input without its padding */
    size_t m = size;
    while (m > 0 && in[m - 1] == '=') m--;
    char *enc = malloc((size_t)n / 3 * 4 + 8);
    if (!enc) abort();
    size_t k = 0;
    for (long i = 0; i < n; i += 3) {
      uint32_t v = (uint32_t)out[i] << 16 | (i + 1 < n ? (uint32_t)out[i + 1] << 8 : 0) | (i + 2 < n ? out[i + 2] : 0);
      enc[k++] = B64[v >> 18 & 63];
      enc[k++] = B64[v >> 12 & 63];
      if (i + 1 < n) enc[k++] = B64[v >> 6 & 63];
      if (i + 2 < n) enc[k++] = B64[v & 63];
    }
    /* the decoder drops the unused low bits of a last partial group: compare whole groups */
    size_t whole = m / 4 * 4;
    if (k < whole) abort();
    for (size_t i = 0; i < whole; i++) {
      char a = in[i] == '-' ? '+' : in[i] == '_' ? '/' : in[i];
      if (a != enc[i]) abort();
    }
    free(enc);
  }
  free(out);
  char *msg = malloc(size + 1);
  if (!msg) return 0;
  memcpy(msg, data, size);
  msg[size] = 0;
  size_t len = 0;
  char *body = srv_error_json(msg, &len);
  if (body) {
    cJSON *j = cJSON_ParseWithLength(body, len);
    cJSON *e = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
    if (!cJSON_IsString(e) || cJSON_GetArraySize(j) != 1) abort();
    size_t ml = strlen(msg) < 1023 ? strlen(msg) : 1023;
    if (strlen(e->valuestring) != ml) abort();
    for (size_t i = 0; i < ml; i++) {
      char want = msg[i] == '\n' || msg[i] == '\r' ? ' ' : msg[i];
      if (e->valuestring[i] != want) abort();
    }
    cJSON_Delete(j);
    free(body);
  }
  free(msg);
  return 0;
}
