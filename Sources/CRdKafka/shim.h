// The only place FareSync imports C: librdkafka and its in-process mock cluster.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
