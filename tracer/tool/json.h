/*
 * json.h - a small, strict JSON reader for report files: the whole text in, a tree of values
 * out, or an error message saying what is wrong and where (line:column). Built for hostile
 * input: nesting is limited, numbers that do not fit are errors, strings may not contain NUL,
 * and every value lives in one arena freed at once.
 */
#ifndef LT_JSON_H
#define LT_JSON_H

#include <stddef.h>

typedef enum {
    JSON_NULL, JSON_BOOL, JSON_INT, JSON_REAL, JSON_STRING, JSON_ARRAY, JSON_OBJECT
} json_type;

typedef struct json_value json_value;
typedef struct json_member {
    const char *key;
    json_value *value;
} json_member;

struct json_value {
    json_type type;
    union {
        int boolean;
        long long integer; /* JSON_INT: a number without fraction or exponent that fits */
        double real;
        const char *string; /* UTF-8, NUL-terminated, no NUL inside */
        struct {
            size_t n;
            json_value **items;
        } array;
        struct {
            size_t n;
            json_member *members; /* keys are unique */
        } object;
    } u;
};

typedef struct json_doc json_doc;

/* Parses text[0..len). Returns the document, or NULL with a message in err (size errsize). */
json_doc *json_parse(const char *text, size_t len, char *err, size_t errsize);
const json_value *json_root(const json_doc *doc);
void json_free(json_doc *doc);

/* The member named key of an object, NULL when absent or when v is not an object. */
const json_value *json_get(const json_value *v, const char *key);

#endif
