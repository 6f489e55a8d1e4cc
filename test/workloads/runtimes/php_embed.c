// A program that embeds PHP (the embed SAPI, libphp) and runs one script
// with its arguments: php_embed SCRIPT [ARGS...]. A test workload: the
// PHP walk must find the engine in a library of a program that is not
// php, and the native stack must still reach this main.
#include <sapi/embed/php_embed.h>

int main(int argc, char **argv)
{
	volatile int status = 1; /* kept across the block's longjmp */

	if (argc < 2)
		return 2;
	PHP_EMBED_START_BLOCK(argc - 1, argv + 1)
	zend_file_handle fh;

	zend_stream_init_filename(&fh, argv[1]);
	status = php_execute_script(&fh) ? 0 : 1;
	zend_destroy_file_handle(&fh);
	PHP_EMBED_END_BLOCK()
	return status;
}
