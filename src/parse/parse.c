/* parse.c — placeholder until the parser is written (issue 4). */
int sp_parse_placeholder(void);
int sp_parse_placeholder(void) { return 0; }
