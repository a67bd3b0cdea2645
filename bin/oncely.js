#!/usr/bin/env node
// The published entry: runs the compiled CLI (`npm run build` produces dist/).
import { main } from '../dist/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
