import { IsString, Length } from 'class-validator';

export class CreateResourceDto {
  @IsString()
  @Length(1, 100)
  name!: string;
}
